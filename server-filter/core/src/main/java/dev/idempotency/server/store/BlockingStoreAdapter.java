package dev.idempotency.server.store;

import io.micronaut.core.annotation.Nullable;

import java.time.Duration;
import java.util.Map;
import java.util.Objects;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;
import java.util.function.Supplier;

/**
 * Runs a {@link BlockingIdempotencyStore} as an {@link IdempotencyStore}: every call is handed
 * to a bounded executor of this adapter and its stage completes on one of those threads, so no
 * caller thread ever waits for the blocking store.
 *
 * <h2>Bounds</h2>
 * At most {@code threads} calls run at once (daemon threads named
 * {@code idempotency-blocking-store-N}, started on first use), and at most
 * {@code queueCapacity} more wait. A call beyond that fails at once with
 * {@link IdempotencyStoreException} ("saturated"), which the filter answers with 503 like any
 * other store failure, instead of queueing without bound while the store is slow. Handing a
 * call over never waits either (no lock is taken), so an event-loop thread may call.
 *
 * <h2>Failures</h2>
 * An {@link IdempotencyStoreException} thrown by the store fails the stage as it is; any other
 * {@link RuntimeException} (a bug in the store) fails it wrapped in an
 * {@link IdempotencyStoreException}, so the filter fails closed rather than answering 500.
 *
 * <p>Creating an adapter starts no thread; {@link #close()} stops its threads (calls still
 * queued are failed), not the store.
 */
public final class BlockingStoreAdapter implements IdempotencyStore, AutoCloseable {

    /** The default number of threads. */
    public static final int DEFAULT_THREADS = 16;
    /** The default number of calls that may wait for a thread. */
    public static final int DEFAULT_QUEUE_CAPACITY = 1000;

    private final BlockingIdempotencyStore store;
    private final BoundedExecutor executor;
    private final String description;

    /**
     * @param store         the blocking store; not closed by the adapter
     * @param threads       how many calls may run at once, at least 1
     * @param queueCapacity how many more may wait, at least 1
     */
    public BlockingStoreAdapter(BlockingIdempotencyStore store, int threads, int queueCapacity) {
        this.store = Objects.requireNonNull(store, "store");
        if (threads < 1) {
            throw new IllegalArgumentException("threads must be at least 1, was " + threads);
        }
        if (queueCapacity < 1) {
            throw new IllegalArgumentException("queueCapacity must be at least 1, was " + queueCapacity);
        }
        this.executor = new BoundedExecutor("idempotency-blocking-store-", threads, queueCapacity);
        this.description = store.getClass().getName() + " (" + threads + " threads, " + queueCapacity + " queued)";
    }

    /** @return the blocking store this adapter runs */
    public BlockingIdempotencyStore delegate() {
        return store;
    }

    @Override
    public CompletionStage<AcquireResult> acquire(String storeKey, byte[] fingerprint, Duration lease) {
        return call(() -> store.acquire(storeKey, fingerprint, lease));
    }

    @Override
    public CompletionStage<AcquireResult> acquire(String storeKey, byte[] fingerprint, Duration lease,
                                                  @Nullable String traceparent) {
        IdempotencyStore.checkTraceparent(traceparent); // an invalid argument throws at once, not on the executor
        return call(() -> store.acquire(storeKey, fingerprint, lease, traceparent));
    }

    @Override
    public CompletionStage<Boolean> complete(String storeKey, long fencingToken, StoredResponse response,
                                             Duration retention) {
        return call(() -> store.complete(storeKey, fencingToken, response, retention));
    }

    @Override
    public CompletionStage<Boolean> release(String storeKey, long fencingToken) {
        return call(() -> store.release(storeKey, fencingToken));
    }

    @Override
    public CompletionStage<Boolean> renew(String storeKey, long fencingToken, Duration lease) {
        return call(() -> store.renew(storeKey, fencingToken, lease));
    }

    @Override
    public CompletionStage<Map<String, byte[]>> steps(String storeKey) {
        return call(() -> store.steps(storeKey));
    }

    @Override
    public CompletionStage<Boolean> recordStep(String storeKey, long fencingToken, String step, byte[] result,
                                               Duration keep) {
        return call(() -> store.recordStep(storeKey, fencingToken, step, result, keep));
    }

    @Override
    public CompletionStage<Boolean> discardSteps(String storeKey, long fencingToken) {
        return call(() -> store.discardSteps(storeKey, fencingToken));
    }

    /** Stops the adapter's threads; calls still waiting fail. */
    @Override
    public void close() {
        executor.shutdown().forEach(r -> {
            if (r instanceof Call<?> call) {
                call.result.completeExceptionally(new IdempotencyStoreException("idempotency store adapter closed"));
            }
        });
    }

    @Override
    public String toString() {
        return "BlockingStoreAdapter[" + description + "]";
    }

    @Override
    public String describe() {
        return "a blocking store run on threads of its own: " + description;
    }

    private <T> CompletionStage<T> call(Supplier<T> work) {
        Call<T> call = new Call<>(work);
        if (!executor.tryExecute(call)) {
            return CompletableFuture.failedFuture(new IdempotencyStoreException(executor.isClosed()
                ? "idempotency store adapter closed"
                : "idempotency store saturated: " + executor.describeSaturation() + " for " + store.getClass().getName()));
        }
        return call.result;
    }

    /** One blocking call and the stage it completes. */
    private static final class Call<T> implements Runnable {
        final CompletableFuture<T> result = new CompletableFuture<>();
        private final Supplier<T> work;

        Call(Supplier<T> work) {
            this.work = work;
        }

        @Override
        public void run() {
            try {
                result.complete(work.get());
            } catch (IdempotencyStoreException e) {
                result.completeExceptionally(e);
            } catch (RuntimeException e) {
                result.completeExceptionally(new IdempotencyStoreException(
                    "idempotency store failed unexpectedly: " + e, e));
            } catch (Error e) {
                result.completeExceptionally(e);
                throw e;
            }
        }
    }
}
