package dev.idempotency.examples.payments;

import io.micronaut.serde.annotation.Serdeable;
import jakarta.inject.Singleton;

import java.util.EnumMap;
import java.util.LinkedHashMap;
import java.util.Locale;
import java.util.Map;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.LongAdder;

/**
 * Counts what the handlers really did, so a demo or a test can check that a retried request
 * changed nothing: every successful create, capture, refund and update is exactly one side
 * effect; a replay by the Idempotency-Key filter never reaches a handler and counts nothing.
 */
@Singleton
final class SideEffectLedger {

    /** The operations that change state. */
    enum Operation { CREATE, CAPTURE, REFUND, UPDATE }

    private final Map<Operation, AtomicLong> sideEffects = new EnumMap<>(Operation.class);
    private final LongAdder executions = new LongAdder();
    private final LongAdder rejections = new LongAdder();

    SideEffectLedger() {
        for (Operation op : Operation.values()) {
            sideEffects.put(op, new AtomicLong());
        }
    }

    /** A mutating handler started. */
    void executed() {
        executions.increment();
    }

    /** A mutating handler refused the request (4xx) and changed nothing. */
    void rejected() {
        rejections.increment();
    }

    /** A state change happened. */
    void sideEffect(Operation op) {
        sideEffects.get(op).incrementAndGet();
    }

    Stats snapshot(int payments) {
        Map<String, Long> byOperation = new LinkedHashMap<>();
        long total = 0;
        for (Operation op : Operation.values()) {
            long n = sideEffects.get(op).get();
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
     * @param handlerExecutions  times a mutating handler ran (side effects and rejections)
     * @param businessRejections times a mutating handler refused the request (400/404/409/422)
     * @param payments           payments held
     */
    @Serdeable
    record Stats(long sideEffects, Map<String, Long> byOperation, long handlerExecutions, long businessRejections,
                 int payments) {
    }
}
