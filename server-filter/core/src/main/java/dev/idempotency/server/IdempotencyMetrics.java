package dev.idempotency.server;

/** Where the filter reports what it did (CONTRACT S22). Implementations are thread-safe. */
interface IdempotencyMetrics {

    void outcome(Outcome outcome);

    void storeLatency(String operation, long nanos, boolean failed);

    void leaseTakenOver();

    void completionFenced();

    void leaseLost();

    /** The store circuit opened ({@code true}) or closed again. */
    default void storeCircuit(boolean open) {
    }
}
