package dev.idempotency.examples.payments;

import io.micronaut.serde.annotation.Serdeable;
import jakarta.inject.Singleton;

import java.util.LinkedHashMap;
import java.util.Locale;
import java.util.Map;
import java.util.concurrent.atomic.LongAdder;

/**
 * Counts what the handlers really did, so a demo or a test can check that a retried request
 * changed nothing: every successful create, capture, refund and update is exactly one side
 * effect; a replay by the Idempotency-Key filter never reaches a handler and counts nothing.
 *
 * <p>The side effects are counted by the {@link PaymentRepository} in the same atomic write as
 * the change itself (in the {@code postgres} environment: in the same transaction, so a rolled
 * back change is not counted, and every instance sees the same numbers). Handler runs and
 * refusals are this instance's own counters, in memory: a handler run whose transaction was
 * rolled back still ran.
 */
@Singleton
final class SideEffectLedger {

    /** The operations that change state. */
    enum Operation { CREATE, CAPTURE, REFUND, UPDATE }

    private final PaymentRepository repository;
    private final LongAdder executions = new LongAdder();
    private final LongAdder rejections = new LongAdder();

    SideEffectLedger(PaymentRepository repository) {
        this.repository = repository;
    }

    /** A mutating handler started. */
    void executed() {
        executions.increment();
    }

    /** A mutating handler refused the request (4xx) and changed nothing. */
    void rejected() {
        rejections.increment();
    }

    /** @return times a mutating handler ran on this instance (kept in memory, whatever the storage) */
    long executions() {
        return executions.sum();
    }

    Stats snapshot(int payments) {
        Map<Operation, Long> counts = repository.sideEffects();
        Map<String, Long> byOperation = new LinkedHashMap<>();
        long total = 0;
        for (Operation op : Operation.values()) {
            long n = counts.getOrDefault(op, 0L);
            byOperation.put(op.name().toLowerCase(Locale.ROOT), n);
            total += n;
        }
        return new Stats(total, byOperation, executions.sum(), rejections.sum(), payments);
    }

    /**
     * {@code GET /stats}.
     *
     * @param sideEffects        state changes performed: creates + captures + refunds + updates
     * @param byOperation        the same, per operation
     * @param handlerExecutions  times a mutating handler ran on this instance (side effects, refusals,
     *                           and runs that failed)
     * @param businessRejections times a mutating handler on this instance refused the request
     *                           (400/404/409/422)
     * @param payments           payments held
     */
    @Serdeable
    record Stats(long sideEffects, Map<String, Long> byOperation, long handlerExecutions, long businessRejections,
                 int payments) {
    }
}
