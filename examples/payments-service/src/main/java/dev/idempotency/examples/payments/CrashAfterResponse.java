package dev.idempotency.examples.payments;

import io.micronaut.context.annotation.Requires;
import io.micronaut.core.order.Ordered;
import io.micronaut.http.HttpRequest;
import io.micronaut.http.MutableHttpResponse;
import io.micronaut.http.annotation.ResponseFilter;
import io.micronaut.http.annotation.ServerFilter;

/**
 * TEST ONLY: the {@link CrashPoints.Point#AFTER_RESPONSE} crash: once a capture's response leaves
 * the filter chain (its record completed), the process dies a moment later.
 */
@ServerFilter("/payments/*/capture")
@Requires(beans = CrashPoints.class)
final class CrashAfterResponse implements Ordered {

    private final CrashPoints crash;

    CrashAfterResponse(CrashPoints crash) {
        this.crash = crash;
    }

    @ResponseFilter
    void after(HttpRequest<?> request, MutableHttpResponse<?> response) {
        if (response.code() < 300 && crash.claim(CrashPoints.Point.AFTER_RESPONSE)) {
            Thread halt = new Thread(() -> {
                try {
                    Thread.sleep(150);
                } catch (InterruptedException e) {
                    Thread.currentThread().interrupt();
                }
                Runtime.getRuntime().halt(137);
            }, "test-crash-after-response");
            halt.setDaemon(true);
            halt.start();
        }
    }

    @Override
    public int getOrder() {
        return HIGHEST_PRECEDENCE; // outermost: after the idempotency filter has settled the record
    }
}
