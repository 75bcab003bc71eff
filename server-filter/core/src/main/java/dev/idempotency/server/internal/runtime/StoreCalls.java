package dev.idempotency.server.internal.runtime;

import io.micronaut.core.annotation.Internal;
import dev.idempotency.server.IdempotencyConfigurationProperties;
import dev.idempotency.server.internal.telemetry.IdempotencyMetrics;
import dev.idempotency.server.internal.telemetry.RequestTracing;
import dev.idempotency.server.store.IdempotencyStoreException;
import io.micronaut.context.annotation.Requires;
import io.micronaut.core.annotation.Nullable;
import io.micronaut.core.propagation.PropagatedContext;
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
    /** The store calls' spans (CONTRACT O4), or {@code null} without OpenTelemetry. */
    private final @Nullable RequestTracing tracing;

    public StoreCalls(IdempotencyMetrics metrics, StoreCircuit circuit, @Nullable RequestTracing tracing) {
        this.metrics = metrics;
        this.circuit = circuit;
        this.timed = metrics.recordsStoreLatency();
        this.tracing = tracing;
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
    public <T> CompletableFuture<T> acquire(PropagatedContext request, Supplier<? extends CompletionStage<T>> call) {
        if (!circuit.admit()) {
            // not a store call, so no latency: the request is counted as store-error by the coordinator
            return CompletableFuture.failedFuture(new CircuitOpen());
        }
        return traced("acquire", request, call);
    }

    /**
     * {@link #timed}, and with tracing on a span {@code idempotency.<operation>}, a child of the
     * request's span, that lasts as long as the call (CONTRACT O4).
     *
     * @param request the propagated context of the request the call is made for
     */
    public <T> CompletableFuture<T> traced(String operation, PropagatedContext request,
                                           Supplier<? extends CompletionStage<T>> call) {
        if (tracing == null) {
            return timed(operation, call);
        }
        RequestTracing.StoreSpan span = tracing.storeCall(request, operation);
        if (span == RequestTracing.StoreSpan.NONE) {
            return timed(operation, call);
        }
        CompletableFuture<T> stage = timed(operation, call);
        stage.whenComplete((v, failure) -> span.end(failure));
        return stage;
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
