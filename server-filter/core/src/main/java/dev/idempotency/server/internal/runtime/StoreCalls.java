package dev.idempotency.server.internal.runtime;

import io.micronaut.core.annotation.Internal;
import dev.idempotency.server.IdempotencyConfigurationProperties;
import dev.idempotency.server.internal.telemetry.IdempotencyMetrics;
import dev.idempotency.server.store.IdempotencyStoreException;
import io.micronaut.context.annotation.Requires;
import jakarta.inject.Singleton;

import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.ExecutionException;
import java.util.function.Supplier;

/**
 * Calls into the store, timed per operation (CONTRACT S22, {@code idempotency.store.latency}),
 * with one failure shape: whatever goes wrong, synchronously or in the stage, the returned
 * stage fails, and a failure that is not already an {@link IdempotencyStoreException} becomes
 * one, so a broken store is answered like an unreachable one (503), never with a 500.
 */
@Singleton
@Requires(property = IdempotencyConfigurationProperties.PREFIX + ".enabled", notEquals = "false")
@Internal
public final class StoreCalls {

    private final IdempotencyMetrics metrics;
    private final StoreCircuit circuit;
    /** Whether calls are timed: not when the metrics would drop the figure (no Micrometer). */
    private final boolean timed;

    public StoreCalls(IdempotencyMetrics metrics, StoreCircuit circuit) {
        this.metrics = metrics;
        this.circuit = circuit;
        this.timed = metrics.recordsStoreLatency();
    }

    /** A new key the store circuit held back: the store is known down (S19). */
    public static final class CircuitOpen extends IdempotencyStoreException {
        public CircuitOpen() {
            super("idempotency store known to be down (store circuit open): not asked");
        }
    }

    /**
     * An acquire, unless the store circuit holds new keys back, in which case the stage fails at
     * once with {@link CircuitOpen}.
     */
    public <T> CompletableFuture<T> acquire(Supplier<? extends CompletionStage<T>> call) {
        if (!circuit.admit()) {
            // not a store call, so no latency: the request is counted as store-error by the coordinator
            return CompletableFuture.failedFuture(new CircuitOpen());
        }
        return timed("acquire", call);
    }

    /** @return the circuit the calls report to */
    StoreCircuit circuit() {
        return circuit;
    }

    public <T> CompletableFuture<T> timed(String operation, Supplier<? extends CompletionStage<T>> call) {
        long start = timed ? System.nanoTime() : 0;
        CompletableFuture<T> stage;
        try {
            stage = call.get().toCompletableFuture();
        } catch (RuntimeException e) {
            stage = CompletableFuture.failedFuture(e);
        }
        if (stage.isDone() && !stage.isCompletedExceptionally()) {
            if (timed) { // the in-memory fast path
                metrics.storeLatency(operation, System.nanoTime() - start, false);
            }
            circuit.succeeded();
            return stage;
        }
        return stage.handle((value, failure) -> {
            if (timed) {
                metrics.storeLatency(operation, System.nanoTime() - start, failure != null);
            }
            if (failure != null) {
                circuit.failed(failure);
                throw new CompletionException(storeFailure(operation, failure));
            }
            circuit.succeeded();
            return value;
        });
    }

    /** @return {@code failure} without its {@link CompletionException} wrappers */
    public static Throwable unwrap(Throwable failure) {
        Throwable t = failure;
        while ((t instanceof CompletionException || t instanceof ExecutionException) && t.getCause() != null) {
            t = t.getCause();
        }
        return t;
    }

    /** @return a short text for a log line: the unwrapped failure's type and message */
    public static String describe(Throwable failure) {
        return unwrap(failure).toString();
    }

    /** @return {@code failure} as the store failure it stands for */
    public static IdempotencyStoreException asStoreFailure(Throwable failure) {
        return storeFailure("call", failure);
    }

    private static IdempotencyStoreException storeFailure(String operation, Throwable failure) {
        Throwable t = unwrap(failure);
        if (t instanceof IdempotencyStoreException e) {
            return e;
        }
        return new IdempotencyStoreException("idempotency store " + operation + " failed: " + t, t);
    }
}
