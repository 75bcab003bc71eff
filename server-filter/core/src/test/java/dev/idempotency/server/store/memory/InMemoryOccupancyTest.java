package dev.idempotency.server.store.memory;

import dev.idempotency.server.store.AcquireResult;
import dev.idempotency.server.store.StoredResponse;
import dev.idempotency.testsupport.MutableClock;
import org.junit.jupiter.api.DisplayName;
import org.junit.jupiter.api.Test;

import java.time.Clock;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletionException;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.ThreadLocalRandom;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/**
 * CONTRACT S17: the in-memory store counts its records and their bytes in one word, and that
 * count is what its two bounds are checked against. These tests pin the count to what the map
 * really holds, after single steps and after many threads racing through every operation.
 */
class InMemoryOccupancyTest {

    private static final Duration LEASE = Duration.ofSeconds(30);
    private static final Duration RETENTION = Duration.ofMinutes(5);

    @Test
    @DisplayName("S17: records and bytes share one word; a combined delta never carries from one into the other")
    void packing() {
        long occupancy = 0;
        occupancy += Occupancy.of(1, 300);
        occupancy += Occupancy.of(1, 250);
        occupancy += Occupancy.of(0, -40); // a take-over by a smaller record
        assertThat(Occupancy.records(occupancy)).isEqualTo(2);
        assertThat(Occupancy.bytes(occupancy)).isEqualTo(510);
        occupancy += Occupancy.of(-1, -300);
        assertThat(Occupancy.records(occupancy)).isEqualTo(1);
        assertThat(Occupancy.bytes(occupancy)).isEqualTo(210);

        long full = Occupancy.of(InMemoryIdempotencyStore.MAX_ENTRIES_LIMIT * 2L,
            InMemoryIdempotencyStore.MAX_BYTES_LIMIT * 2 - 1);
        assertThat(Occupancy.records(full)).isEqualTo(InMemoryIdempotencyStore.MAX_ENTRIES_LIMIT * 2L);
        assertThat(Occupancy.bytes(full)).isEqualTo(InMemoryIdempotencyStore.MAX_BYTES_LIMIT * 2 - 1);
    }

    @Test
    @DisplayName("S17: bounds past what the count can hold are refused, naming the limit")
    void limits() {
        Clock clock = Clock.systemUTC();
        assertThatThrownBy(() -> new InMemoryIdempotencyStore(clock, InMemoryIdempotencyStore.MAX_ENTRIES_LIMIT + 1))
            .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("maxEntries must be 1 to 4194304")
            .hasMessageContaining("shared store");
        assertThatThrownBy(() -> new InMemoryIdempotencyStore(clock, 10, InMemoryIdempotencyStore.MAX_BYTES_LIMIT + 1))
            .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("maxBytes must be 65536 to");
        assertThat(new InMemoryIdempotencyStore(clock, InMemoryIdempotencyStore.MAX_ENTRIES_LIMIT,
            InMemoryIdempotencyStore.MAX_BYTES_LIMIT).describe()).contains("4194304 records");
    }

    @Test
    @DisplayName("S17: every step (acquire, take-over, completion, release, eviction, purge) keeps the count true")
    void eachStep() {
        MutableClock clock = new MutableClock();
        InMemoryIdempotencyStore store = new InMemoryIdempotencyStore(clock, 3);
        long a = acquired(store, key(1));
        assertCountIsTrue(store, 1);
        assertThat(join(store.complete(key(1), a, response(40), RETENTION))).isTrue();
        assertCountIsTrue(store, 1);
        long b = acquired(store, key(2));
        assertThat(join(store.release(key(2), b))).isTrue();
        assertCountIsTrue(store, 1);
        acquired(store, key(3));
        clock.advance(LEASE.plusSeconds(1));
        acquired(store, key(3)); // takes over the expired lease: one record, its weight replaced
        assertCountIsTrue(store, 2);
        long c = acquired(store, key(4));
        assertThat(join(store.complete(key(4), c, response(10), RETENTION))).isTrue();
        acquired(store, key(5)); // the fourth record: key 1, the earliest completed, is evicted
        assertCountIsTrue(store, 3);
        assertThat(join(store.find(key(1)))).isEmpty();
        clock.advance(RETENTION.plusSeconds(1));
        assertThat(store.purgeExpired()).isEqualTo(3);
        assertCountIsTrue(store, 0);
    }

    @Test
    @DisplayName("S17: after eight threads race through every operation on a small store, the count is what the map holds")
    void manyThreadsRacing() throws Exception {
        InMemoryIdempotencyStore store = new InMemoryIdempotencyStore(Clock.systemUTC(), 64, 64 * 1024);
        int threads = 8;
        ExecutorService pool = Executors.newFixedThreadPool(threads);
        CountDownLatch start = new CountDownLatch(1);
        List<Future<Integer>> done = new ArrayList<>();
        for (int t = 0; t < threads; t++) {
            done.add(pool.submit(() -> {
                start.await();
                ThreadLocalRandom random = ThreadLocalRandom.current();
                int full = 0;
                for (int i = 0; i < 20_000; i++) {
                    String key = key(random.nextInt(200)); // keys shared between threads: duplicates and races
                    AcquireResult result;
                    try {
                        result = join(store.acquire(key, new byte[] {1}, LEASE));
                    } catch (CompletionException e) {
                        full++; // every record in progress: the store refuses, as it must
                        continue;
                    }
                    if (result instanceof AcquireResult.Acquired acquired) {
                        switch (random.nextInt(3)) {
                            case 0 -> join(store.release(key, acquired.fencingToken()));
                            case 1 -> join(store.renew(key, acquired.fencingToken(), LEASE));
                            default -> join(store.complete(key, acquired.fencingToken(),
                                response(random.nextInt(2000)), RETENTION));
                        }
                    }
                }
                return full;
            }));
        }
        start.countDown();
        for (Future<Integer> f : done) {
            f.get();
        }
        pool.shutdown();
        long[] c = store.countedAndHeld();
        assertThat(c[0]).as("records counted").isEqualTo(c[2]).isLessThanOrEqualTo(64);
        // callers racing at the end may each overshoot the byte bound by one record (class javadoc)
        assertThat(c[1]).as("bytes counted").isEqualTo(c[3]).isLessThanOrEqualTo(64 * 1024 + threads * 2400L);
        assertThat(store.size()).isEqualTo((int) c[2]);
    }

    private static void assertCountIsTrue(InMemoryIdempotencyStore store, int records) {
        long[] c = store.countedAndHeld();
        assertThat(c[0]).as("records counted").isEqualTo(c[2]).isEqualTo(records);
        assertThat(c[1]).as("bytes counted").isEqualTo(c[3]);
        assertThat(store.bytes()).isEqualTo(c[3]);
    }

    private static long acquired(InMemoryIdempotencyStore store, String key) {
        return ((AcquireResult.Acquired) join(store.acquire(key, new byte[] {1}, LEASE))).fencingToken();
    }

    private static StoredResponse response(int bodyLength) {
        return new StoredResponse(200, Map.of(), new byte[bodyLength], false);
    }

    private static String key(int i) {
        return String.format("%064x", i);
    }

    private static <T> T join(CompletionStage<T> stage) {
        return stage.toCompletableFuture().join();
    }
}
