package dev.idempotency.store.tck;

import dev.idempotency.testsupport.MutableClock;

import dev.idempotency.server.store.AcquireResult;
import dev.idempotency.server.store.IdempotencyStore;
import dev.idempotency.server.store.IdempotencyStoreException;
import dev.idempotency.server.store.InMemoryIdempotencyStore;
import org.junit.jupiter.api.DisplayName;
import org.junit.jupiter.api.Test;

import java.time.Duration;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/** The store contract suite against the in-memory store, plus its own bound (S17). */
class InMemoryIdempotencyStoreContractTest extends IdempotencyStoreContractTest {

    @Override
    protected IdempotencyStore store(MutableClock clock) {
        return new InMemoryIdempotencyStore(clock, 10_000);
    }

    @Test
    @DisplayName("S17: the in-memory store is bounded: completed records are evicted, live locks never")
    void boundedByMaxEntries() {
        InMemoryIdempotencyStore small = new InMemoryIdempotencyStore(clock, 10);
        for (int i = 0; i < 10; i++) {
            String key = newKey();
            long token = ((AcquireResult.Acquired) join(small.acquire(key, fingerprint("a"), LEASE))).fencingToken();
            join(small.complete(key, token, response(200, "x"), RETENTION));
        }
        assertThat(join(small.acquire(newKey(), fingerprint("a"), LEASE))).isInstanceOf(AcquireResult.Acquired.class);
        assertThat(small.size()).isLessThanOrEqualTo(10);

        InMemoryIdempotencyStore locked = new InMemoryIdempotencyStore(clock, 3);
        for (int i = 0; i < 3; i++) {
            join(locked.acquire(newKey(), fingerprint("a"), LEASE));
        }
        assertThatThrownBy(() -> join(locked.acquire(newKey(), fingerprint("a"), LEASE)))
            .isInstanceOf(IdempotencyStoreException.class)
            .hasMessageContaining("max-entries");
        clock.advance(LEASE.plus(Duration.ofSeconds(1)));
        assertThat(join(locked.acquire(newKey(), fingerprint("a"), LEASE))).isInstanceOf(AcquireResult.Acquired.class);
    }

    @Test
    @DisplayName("S16: purgeExpired removes records past their lease or retention")
    void purgeExpired() {
        InMemoryIdempotencyStore s = new InMemoryIdempotencyStore(clock, 100);
        join(s.acquire(newKey(), fingerprint("a"), Duration.ofSeconds(5)));
        join(s.acquire(newKey(), fingerprint("a"), Duration.ofSeconds(60)));
        clock.advance(Duration.ofSeconds(10));
        assertThat(s.purgeExpired()).isEqualTo(1);
        assertThat(s.size()).isEqualTo(1);
    }

    @Test
    @DisplayName("S17 regression: a full store under 16 concurrent writers evicts and never reports itself "
        + "full of in-progress requests (concurrent evictions used to pick the same records)")
    void concurrentEvictionNeverFailsSpuriously() throws Exception {
        InMemoryIdempotencyStore small = new InMemoryIdempotencyStore(clock, 200);
        int threads = 16;
        java.util.concurrent.ExecutorService pool = java.util.concurrent.Executors.newFixedThreadPool(threads);
        try {
            java.util.List<java.util.concurrent.Future<?>> futures = new java.util.ArrayList<>();
            for (int t = 0; t < threads; t++) {
                futures.add(pool.submit(() -> {
                    for (int i = 0; i < 2_000; i++) {
                        String key = newKey();
                        long token = ((AcquireResult.Acquired) join(small.acquire(key, fingerprint("a"), LEASE))).fencingToken();
                        join(small.complete(key, token, response(200, "x"), RETENTION));
                    }
                    return null;
                }));
            }
            for (java.util.concurrent.Future<?> f : futures) {
                f.get(60, java.util.concurrent.TimeUnit.SECONDS);
            }
        } finally {
            pool.shutdownNow();
        }
        assertThat(small.size()).isLessThanOrEqualTo(200 + threads);
    }
}
