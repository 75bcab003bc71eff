package dev.idempotency.store.postgres;

import dev.idempotency.server.store.IdempotencyStoreException;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.DisplayName;
import org.junit.jupiter.api.Test;

import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.stream.IntStream;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/** Group commit's bookkeeping, without a database: who waits, who goes together, who is never stranded. */
class StatementBatcherTest {

    private final ExecutorService threads = Executors.newFixedThreadPool(4);
    private final List<List<Integer>> batches = Collections.synchronizedList(new ArrayList<>());
    /** Counted down when the batch holding call 0 runs: its thread is then busy until the gate opens. */
    private final CountDownLatch entered = new CountDownLatch(1);

    @AfterEach
    void stop() {
        threads.shutdownNow();
    }

    private StatementBatcher<Integer, String> batcher(int maxRunning, int maxBatch, long maxWeight, int capacity,
                                                      CountDownLatch gate) {
        return new StatementBatcher<>("test", task -> {
            threads.execute(task);
            return true;
        }, calls -> {
            batches.add(List.copyOf(calls));
            if (calls.contains(0)) {
                entered.countDown();
                await(gate); // the first call holds its thread until the test lets go
            }
            return calls.stream().map(i -> "answer " + i).toList();
        }, i -> i, () -> maxRunning, maxBatch, maxWeight, capacity);
    }

    private static void await(CountDownLatch latch) {
        try {
            assertThat(latch.await(10, TimeUnit.SECONDS)).isTrue();
        } catch (InterruptedException e) {
            throw new IllegalStateException(e);
        }
    }

    private static String join(CompletableFuture<String> f) {
        return f.orTimeout(10, TimeUnit.SECONDS).join();
    }

    @Test
    @DisplayName("S17: a call that finds a free slot goes out at once, alone")
    void aloneAtOnce() {
        StatementBatcher<Integer, String> b = batcher(2, 64, Long.MAX_VALUE, 100, new CountDownLatch(0));
        assertThat(join(b.submit(7))).isEqualTo("answer 7");
        assertThat(batches).containsExactly(List.of(7));
    }

    @Test
    @DisplayName("S17: calls that arrive while the only slot is busy go together, in arrival order, as one batch")
    void waitingCallsGoTogether() {
        CountDownLatch gate = new CountDownLatch(1);
        StatementBatcher<Integer, String> b = batcher(1, 64, Long.MAX_VALUE, 100, gate);
        CompletableFuture<String> first = b.submit(0);
        await(entered);
        List<CompletableFuture<String>> rest = IntStream.rangeClosed(1, 10).mapToObj(b::submit).toList();
        gate.countDown();
        assertThat(join(first)).isEqualTo("answer 0");
        for (int i = 0; i < rest.size(); i++) {
            assertThat(join(rest.get(i))).isEqualTo("answer " + (i + 1));
        }
        assertThat(batches).containsExactly(List.of(0), List.of(1, 2, 3, 4, 5, 6, 7, 8, 9, 10));
        assertThat(b.batches()).isEqualTo(2);
    }

    @Test
    @DisplayName("S17: a batch takes at most max-batch-size calls and, past its first, at most the weight bound")
    void boundsPerBatch() {
        CountDownLatch gate = new CountDownLatch(1);
        StatementBatcher<Integer, String> b = batcher(1, 4, 10, 100, gate);
        CompletableFuture<String> first = b.submit(0);
        await(entered);
        List<CompletableFuture<String>> rest = new ArrayList<>();
        for (int i : new int[] {1, 2, 3, 4, 5, 6, 12, 1}) { // the weight of a call is its value
            rest.add(b.submit(i));
        }
        gate.countDown();
        join(first);
        rest.forEach(StatementBatcherTest::join);
        assertThat(batches).containsExactly(List.of(0), List.of(1, 2, 3, 4), List.of(5), List.of(6), List.of(12),
            List.of(1));
    }

    @Test
    @DisplayName("S19: past queue-capacity a call fails at once with IdempotencyStoreException; the others still run")
    void capacity() {
        CountDownLatch gate = new CountDownLatch(1);
        StatementBatcher<Integer, String> b = batcher(1, 64, Long.MAX_VALUE, 3, gate);
        CompletableFuture<String> first = b.submit(0);
        await(entered);
        List<CompletableFuture<String>> waiting = IntStream.rangeClosed(1, 3).mapToObj(b::submit).toList();
        CompletableFuture<String> refused = b.submit(4);
        assertThat(refused).isCompletedExceptionally();
        assertThatThrownBy(refused::join).hasCauseInstanceOf(IdempotencyStoreException.class)
            .hasMessageContaining("3 calls waiting");
        gate.countDown();
        join(first);
        waiting.forEach(StatementBatcherTest::join);
    }

    @Test
    @DisplayName("S19: when a batch fails, each of its calls fails with that failure, and later batches still run")
    void failedBatch() {
        StatementBatcher<Integer, String> b = new StatementBatcher<>("test", task -> {
            threads.execute(task);
            return true;
        }, calls -> {
            if (calls.contains(13)) {
                throw new IdempotencyStoreException("unlucky");
            }
            return calls.stream().map(i -> "answer " + i).toList();
        }, i -> 1, () -> 1, 64, Long.MAX_VALUE, 100);
        assertThatThrownBy(() -> join(b.submit(13))).hasCauseInstanceOf(IdempotencyStoreException.class)
            .hasMessageContaining("unlucky");
        assertThat(join(b.submit(14))).isEqualTo("answer 14");
    }

    @Test
    @DisplayName("S19: when the statement threads refuse the work, the calls fail instead of waiting forever")
    void refusedByTheThreads() {
        StatementBatcher<Integer, String> b = new StatementBatcher<>("test", task -> false,
            calls -> List.of(), i -> 1, () -> 2, 64, Long.MAX_VALUE, 100);
        assertThatThrownBy(() -> join(b.submit(1))).hasCauseInstanceOf(IdempotencyStoreException.class)
            .hasMessageContaining("closed or saturated");
    }

    @Test
    @DisplayName("S10/S17: 16 threads submitting 20,000 calls through two slots: every call answered, exactly once")
    void nothingStranded() throws Exception {
        StatementBatcher<Integer, String> b = new StatementBatcher<>("test", task -> {
            threads.execute(task);
            return true;
        }, calls -> calls.stream().map(i -> "answer " + i).toList(), i -> 1, () -> 2, 64, Long.MAX_VALUE, 100_000);
        ExecutorService submitters = Executors.newFixedThreadPool(16);
        try {
            List<Future<List<CompletableFuture<String>>>> all = new ArrayList<>();
            for (int t = 0; t < 16; t++) {
                int base = t * 1250;
                all.add(submitters.submit(() -> IntStream.range(base, base + 1250).mapToObj(b::submit).toList()));
            }
            int n = 0;
            for (Future<List<CompletableFuture<String>>> f : all) {
                List<CompletableFuture<String>> answers = f.get(30, TimeUnit.SECONDS);
                for (CompletableFuture<String> a : answers) {
                    assertThat(join(a)).isEqualTo("answer " + n++);
                }
            }
            assertThat(n).isEqualTo(20_000);
        } finally {
            submitters.shutdownNow();
        }
    }
}
