package dev.idempotency.store.tck;

import dev.idempotency.server.store.AcquireResult;
import dev.idempotency.server.store.BlockingIdempotencyStore;
import dev.idempotency.server.store.BlockingStoreAdapter;
import dev.idempotency.server.store.IdempotencyStore;
import dev.idempotency.server.store.IdempotencyStoreException;
import dev.idempotency.server.store.memory.InMemoryIdempotencyStore;
import dev.idempotency.server.store.StoredResponse;
import dev.idempotency.testsupport.MutableClock;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.DisplayName;
import org.junit.jupiter.api.Test;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/**
 * S17: a store that can only block, run through {@link BlockingStoreAdapter}, passes the whole
 * contract suite; the adapter never runs the store on the caller's thread, fails fast when it is
 * saturated, and turns a store's bug into a store failure (503), not a 500.
 */
class BlockingStoreAdapterContractTest extends IdempotencyStoreContractTest {

    /** A third-party store as it would be written against a blocking client. */
    static final class BlockingInMemoryStore implements BlockingIdempotencyStore {
        final InMemoryIdempotencyStore delegate;
        volatile CountDownLatch hold = new CountDownLatch(0);
        final List<String> threads = new java.util.concurrent.CopyOnWriteArrayList<>();

        BlockingInMemoryStore(MutableClock clock) {
            this.delegate = new InMemoryIdempotencyStore(clock, 100_000);
        }

        private void enter() {
            threads.add(Thread.currentThread().getName());
            try {
                if (!hold.await(30, TimeUnit.SECONDS)) {
                    throw new IdempotencyStoreException("held too long");
                }
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                throw new IdempotencyStoreException("interrupted", e);
            }
        }

        @Override
        public AcquireResult acquire(String storeKey, byte[] fingerprint, Duration lease) {
            enter();
            return delegate.acquire(storeKey, fingerprint, lease).toCompletableFuture().join();
        }

        @Override
        public AcquireResult acquire(String storeKey, byte[] fingerprint, Duration lease, String traceparent) {
            enter();
            return delegate.acquire(storeKey, fingerprint, lease, traceparent).toCompletableFuture().join();
        }

        @Override
        public boolean complete(String storeKey, long fencingToken, StoredResponse response, Duration retention) {
            enter();
            return delegate.complete(storeKey, fencingToken, response, retention).toCompletableFuture().join();
        }

        @Override
        public boolean release(String storeKey, long fencingToken) {
            enter();
            return delegate.release(storeKey, fencingToken).toCompletableFuture().join();
        }

        @Override
        public java.util.Map<String, byte[]> steps(String storeKey) {
            enter();
            return delegate.steps(storeKey).toCompletableFuture().join();
        }

        @Override
        public boolean recordStep(String storeKey, long fencingToken, String step, byte[] result, Duration keep) {
            enter();
            return delegate.recordStep(storeKey, fencingToken, step, result, keep).toCompletableFuture().join();
        }

        @Override
        public boolean discardSteps(String storeKey, long fencingToken) {
            enter();
            return delegate.discardSteps(storeKey, fencingToken).toCompletableFuture().join();
        }

        @Override
        public boolean renew(String storeKey, long fencingToken, Duration lease) {
            enter();
            if (storeKey.equals("buggy")) {
                throw new IllegalStateException("a bug in the store");
            }
            return delegate.renew(storeKey, fencingToken, lease).toCompletableFuture().join();
        }
    }

    private BlockingInMemoryStore blocking;
    private BlockingStoreAdapter adapter;

    @Override
    protected IdempotencyStore store(MutableClock clock) {
        blocking = new BlockingInMemoryStore(clock);
        adapter = new BlockingStoreAdapter(blocking, 8, 200);
        return adapter;
    }

    @AfterEach
    void close() {
        blocking.hold.countDown();
        adapter.close();
    }

    @Test
    @DisplayName("S17: the blocking store runs on the adapter's threads, never on the caller's")
    void runsOnItsOwnThreads() {
        acquire(newKey(), fingerprint("a"), LEASE);
        assertThat(blocking.threads).isNotEmpty().allMatch(t -> t.startsWith("idempotency-blocking-store-"));
    }

    @Test
    @DisplayName("S17/S19: a saturated adapter fails the call at once with IdempotencyStoreException")
    void saturatedFailsFast() {
        blocking.hold = new CountDownLatch(1);
        List<CompletableFuture<AcquireResult>> accepted = new ArrayList<>();
        CompletableFuture<AcquireResult> refused = null;
        for (int i = 0; i < 1000 && refused == null; i++) {
            CompletableFuture<AcquireResult> call = adapter.acquire(newKey(), fingerprint("a"), LEASE).toCompletableFuture();
            if (call.isCompletedExceptionally()) {
                refused = call;
            } else {
                accepted.add(call);
            }
        }
        // 8 running and at most 200 waiting: the next one is refused, at once
        assertThat(refused).isNotNull();
        assertThat(accepted).hasSizeBetween(200, 8 + 200);
        assertThatThrownBy(refused::join).hasCauseInstanceOf(IdempotencyStoreException.class)
            .hasMessageContaining("saturated");
        blocking.hold.countDown();
        assertThat(accepted.stream().map(IdempotencyStoreContractTest::join))
            .allMatch(r -> r instanceof AcquireResult.Acquired);
    }

    @Test
    @DisplayName("S19: a bug in the blocking store fails the stage with IdempotencyStoreException")
    void bugBecomesStoreFailure() {
        assertThatThrownBy(() -> renew("buggy", 1, LEASE))
            .isInstanceOf(IdempotencyStoreException.class)
            .hasMessageContaining("a bug in the store");
    }
}
