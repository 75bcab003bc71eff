package dev.idempotency.examples.payments;

import io.micronaut.context.annotation.Value;
import io.micronaut.core.annotation.Nullable;
import jakarta.inject.Singleton;

import java.time.Duration;

/**
 * DEMO ONLY: honours the {@value #HEADER} request header (milliseconds) by sleeping inside the
 * handler before doing the work, so a second request with the same Idempotency-Key can arrive
 * while the first is still running and be answered 409 {@code idempotency-request-in-progress}.
 * Capped at {@code payments.demo.max-delay} (default 10s); switched off with
 * {@code payments.demo.delay-enabled=false}. A real service has nothing like it.
 *
 * <p>The header is not part of the Idempotency-Key fingerprint (only the method, path, query and
 * body are), so the slow request and its fast duplicate count as the same request.
 */
@Singleton
final class DemoDelay {

    /** The request header holding the delay in milliseconds. */
    static final String HEADER = "X-Demo-Delay";

    private final boolean enabled;
    private final long maxMillis;

    DemoDelay(@Value("${payments.demo.delay-enabled:true}") boolean enabled,
              @Value("${payments.demo.max-delay:10s}") Duration max) {
        this.enabled = enabled;
        this.maxMillis = max.toMillis();
    }

    /**
     * Sleeps for the header's value, capped.
     *
     * @param header the header value, or null when absent
     */
    void apply(@Nullable String header) {
        if (!enabled || header == null) {
            return;
        }
        long millis;
        try {
            millis = Long.parseLong(header.trim());
        } catch (NumberFormatException e) {
            throw PaymentException.invalid(HEADER + " must be a whole number of milliseconds.");
        }
        if (millis <= 0) {
            return;
        }
        try {
            Thread.sleep(Math.min(millis, maxMillis));
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new IllegalStateException("interrupted during the demo delay", e);
        }
    }
}
