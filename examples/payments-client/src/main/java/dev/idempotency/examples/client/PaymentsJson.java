package dev.idempotency.examples.client;

import io.micronaut.core.annotation.Nullable;
import io.micronaut.serde.annotation.Serdeable;

import java.util.Map;

/**
 * The parts of the payments service's JSON this demo reads and writes (see
 * {@code examples/payments-service/README.md}); members it does not need are ignored.
 */
final class PaymentsJson {

    private PaymentsJson() {
    }

    /** {@code POST /payments}: amount in minor units (2500 = 25.00). */
    @Serdeable
    record NewPayment(long amount, String currency, String description, String customer) {
    }

    /** {@code POST /payments/{id}/capture}: no amount, so the whole authorized amount. */
    @Serdeable
    record Capture() {
    }

    /** {@code POST /payments/{id}/refunds}. */
    @Serdeable
    record NewRefund(long amount, String reason) {
    }

    /** A payment as the service returns it. */
    @Serdeable
    record Payment(String id, String status, long amount, String currency, long amountCaptured, long amountRefunded) {
    }

    /** A refund as the service returns it. */
    @Serdeable
    record Refund(String id, String paymentId, long amount) {
    }

    /**
     * {@code GET /stats}: the side effects the service performed, in total and per operation, and
     * how often its write handlers ran (on this instance).
     */
    @Serdeable
    record Stats(long sideEffects, @Nullable Map<String, Long> byOperation, long handlerExecutions,
                 long businessRejections) {

        long of(String operation) {
            return byOperation == null ? 0 : byOperation.getOrDefault(operation, 0L);
        }
    }
}
