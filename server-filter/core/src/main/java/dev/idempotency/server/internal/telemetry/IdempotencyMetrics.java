package dev.idempotency.server.internal.telemetry;

import dev.idempotency.server.IdempotencyOutcome;
import io.micronaut.core.annotation.Internal;

/** Where the filter reports what it did (CONTRACT S22). Implementations are thread-safe. */
@Internal
public interface IdempotencyMetrics {

    void outcome(IdempotencyOutcome outcome);

    void storeLatency(String operation, long nanos, boolean failed);

    /**
     * @return whether {@link #storeLatency} records anything: when it does not, store calls are
     *     not timed at all (two clock reads per call saved)
     */
    default boolean recordsStoreLatency() {
        return true;
    }

    void leaseTakenOver();

    void completionFenced();

    /**
     * A result could not be stored within half its lease and its completion was given up (or not
     * retried because the application was stopping): its key stays in progress until the lease
     * ends, and a retry after that runs the operation again.
     */
    void completionAbandoned();

    void leaseLost();

    /**
     * A durable step (CONTRACT S23) finished: its work ran and its result was recorded
     * ({@code resumed} false), or an earlier execution's recorded result was returned without
     * running it ({@code resumed} true).
     */
    default void step(boolean resumed) {
    }

    /** The store circuit opened ({@code true}) or closed again. */
    default void storeCircuit(boolean open) {
    }
}
