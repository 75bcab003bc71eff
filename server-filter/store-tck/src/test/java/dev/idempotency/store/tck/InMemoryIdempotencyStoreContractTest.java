package dev.idempotency.store.tck;

import dev.idempotency.testsupport.MutableClock;

import dev.idempotency.server.store.AcquireResult;
import dev.idempotency.server.store.IdempotencyStore;
import dev.idempotency.server.store.IdempotencyStoreException;
import dev.idempotency.server.store.memory.InMemoryIdempotencyStore;
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
    @DisplayName("S17: in a full store a replay or a duplicate evicts nothing, and a refused new key leaves no record")
    void fullStoreLookupsEvictNothing() {
        InMemoryIdempotencyStore s = new InMemoryIdempotencyStore(clock, 3);
        String done = newKey();
        join(s.complete(done, acquired(s, done), response(201, "done"), RETENTION));
        String running = newKey();
        acquired(s, running);
        acquired(s, newKey());
        assertThat(s.size()).isEqualTo(3);

        assertThat(join(s.acquire(done, fingerprint("a"), LEASE))).isInstanceOf(AcquireResult.Replay.class);
        assertThat(join(s.acquire(running, fingerprint("a"), LEASE))).isInstanceOf(AcquireResult.InProgress.class);
        assertThat(join(s.acquire(running, fingerprint("b"), LEASE))).isInstanceOf(AcquireResult.Mismatch.class);
        assertThat(s.size()).isEqualTo(3);
        assertThat(join(s.find(done))).isPresent();

        // a new key takes the completed record's place
        acquired(s, newKey());
        assertThat(join(s.find(done))).isEmpty();
        assertThat(s.size()).isEqualTo(3);

        // now all three are in progress: the next new key is refused and leaves nothing behind
        long bytes = s.bytes();
        String refused = newKey();
        assertThatThrownBy(() -> join(s.acquire(refused, fingerprint("a"), LEASE)))
            .isInstanceOf(IdempotencyStoreException.class).hasMessageContaining("max-entries");
        assertThat(join(s.find(refused))).isEmpty();
        assertThat(s.size()).isEqualTo(3);
        assertThat(s.bytes()).isEqualTo(bytes);
        assertThat(join(s.acquire(running, fingerprint("a"), LEASE))).isInstanceOf(AcquireResult.InProgress.class);
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

    private static dev.idempotency.server.store.StoredResponse body(int size) {
        byte[] b = new byte[size];
        java.util.Arrays.fill(b, (byte) 'x');
        return new dev.idempotency.server.store.StoredResponse(200, java.util.Map.of("Content-Type",
            java.util.List.of("application/octet-stream")), b, false);
    }

    private long acquired(IdempotencyStore s, String key) {
        return ((AcquireResult.Acquired) join(s.acquire(key, fingerprint("a"), LEASE))).fencingToken();
    }

    @Test
    @DisplayName("S17: the in-memory store is bounded in bytes: large responses evict the earliest-completed records")
    void boundedByBytes() {
        InMemoryIdempotencyStore s = new InMemoryIdempotencyStore(clock, 10_000, 1 << 20);
        java.util.List<String> keys = new java.util.ArrayList<>();
        for (int i = 0; i < 100; i++) {
            String key = newKey();
            keys.add(key);
            assertThat(join(s.complete(key, acquired(s, key), body(64 * 1024), RETENTION))).isTrue();
            assertThat(s.bytes()).isLessThanOrEqualTo(1 << 20);
        }
        assertThat(s.size()).isBetween(10, 16);
        // the latest is replayed whole; the earliest was evicted and runs again
        AcquireResult last = join(s.acquire(keys.get(99), fingerprint("a"), LEASE));
        assertThat(last).isInstanceOfSatisfying(AcquireResult.Replay.class,
            r -> assertThat(r.response()).isEqualTo(body(64 * 1024)));
        assertThat(join(s.acquire(keys.get(0), fingerprint("a"), LEASE))).isInstanceOf(AcquireResult.Acquired.class);
    }

    @Test
    @DisplayName("S17: when requests in progress fill the byte budget a new key is refused, and no live lock is dropped")
    void inProgressFillsTheBudget() {
        InMemoryIdempotencyStore s = new InMemoryIdempotencyStore(clock, 100_000, 64 * 1024);
        java.util.List<String> live = new java.util.ArrayList<>();
        IdempotencyStoreException refused = null;
        while (refused == null && live.size() < 10_000) {
            String key = newKey();
            try {
                acquired(s, key);
                live.add(key);
            } catch (IdempotencyStoreException e) {
                refused = e;
            }
        }
        assertThat(refused).isNotNull().hasMessageContaining("max-bytes");
        assertThat(live.size()).isBetween(100, 400);
        assertThat(s.bytes()).isLessThanOrEqualTo(64 * 1024);
        for (String key : live) {
            assertThat(join(s.acquire(key, fingerprint("a"), LEASE))).isInstanceOf(AcquireResult.InProgress.class);
        }
        // once their leases run out there is room again
        clock.advance(LEASE.plus(Duration.ofSeconds(1)));
        assertThat(join(s.acquire(newKey(), fingerprint("a"), LEASE))).isInstanceOf(AcquireResult.Acquired.class);
    }

    @Test
    @DisplayName("S15/S17: a response that cannot fit the byte budget is kept without its body: the replay is an omitted body, never a second run")
    void responseLargerThanTheBudgetIsOmitted() {
        InMemoryIdempotencyStore s = new InMemoryIdempotencyStore(clock, 100, 64 * 1024);
        String key = newKey();
        assertThat(join(s.complete(key, acquired(s, key), body(200 * 1024), RETENTION))).isTrue();
        AcquireResult replay = join(s.acquire(key, fingerprint("a"), LEASE));
        assertThat(replay).isInstanceOfSatisfying(AcquireResult.Replay.class, r -> {
            assertThat(r.response().status()).isEqualTo(200);
            assertThat(r.response().bodyOmitted()).isTrue();
            assertThat(r.response().headers()).containsKey("Content-Type");
        });
        assertThat(s.bytes()).isLessThanOrEqualTo(64 * 1024);
    }

    @Test
    @DisplayName("S17: the byte count follows every change: release, takeover, completion and purge")
    void byteAccounting() {
        InMemoryIdempotencyStore s = new InMemoryIdempotencyStore(clock, 100);
        String a = newKey();
        long token = acquired(s, a);
        long inProgress = s.bytes();
        assertThat(inProgress).isPositive();
        assertThat(join(s.release(a, token))).isTrue();
        assertThat(s.bytes()).isZero();
        token = acquired(s, a);
        clock.advance(LEASE.plus(Duration.ofSeconds(1)));
        long taken = acquired(s, a); // takeover of the expired lease: one record still
        assertThat(s.bytes()).isEqualTo(inProgress);
        assertThat(join(s.complete(a, token, body(1000), RETENTION))).isFalse(); // fenced
        assertThat(join(s.complete(a, taken, body(1000), RETENTION))).isTrue();
        assertThat(s.bytes()).isGreaterThan(inProgress + 1000);
        clock.advance(RETENTION.plus(Duration.ofSeconds(1)));
        assertThat(s.purgeExpired()).isEqualTo(1);
        assertThat(s.bytes()).isZero();
    }
}
