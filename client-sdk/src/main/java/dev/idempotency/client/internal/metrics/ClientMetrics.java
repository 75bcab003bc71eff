package dev.idempotency.client.internal.metrics;

import io.github.resilience4j.retry.RetryRegistry;
import io.micronaut.core.annotation.Internal;

/** The client's meters (CONTRACT C10); a no-op without Micrometer. */
@Internal
public interface ClientMetrics {

    ClientMetrics NOOP = new ClientMetrics() {
    };

    /** A request was sent. */
    default void attempt() {
    }

    /** A retry was scheduled; the reason is a low-cardinality tag (status-503, in-progress, io, timeout). */
    default void retry(String reason) {
    }

    /** An operation ended: success, replayed, non-retryable, key-reused, in-progress, retries-exhausted, budget-exhausted, deadline-exceeded, error. */
    default void outcome(String outcome) {
    }

    static ClientMetrics create(Object meterRegistry, String clientName, RetryRegistry retries) {
        return meterRegistry == null ? NOOP : MicrometerClientMetrics.create(meterRegistry, clientName, retries);
    }
}
