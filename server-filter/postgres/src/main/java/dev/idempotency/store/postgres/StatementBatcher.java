package dev.idempotency.store.postgres;

import dev.idempotency.server.store.IdempotencyStoreException;

import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;
import java.util.function.IntSupplier;
import java.util.function.ToIntFunction;

/**
 * Group commit for one kind of store operation: calls that arrive while earlier ones are running
 * wait together and go to the database as one statement, in one transaction and one commit.
 * A commit (its WAL flush) is what a single-row statement mostly costs, so under load N requests
 * cost about one commit instead of N; alone, a call goes out at once, as a batch of one, and
 * nothing ever waits for a batch to fill.
 *
 * <p>At most {@code maxRunning} batches run at once, each on a thread of the store's statement
 * executor; a running batch takes, when it is done, everything that queued meanwhile (up to
 * {@code maxBatch} calls and {@code maxWeight}, counted by the caller's weight function, for
 * example body bytes). The batch's work runs its calls in order, in one transaction, so every
 * call sees the database as if the calls had run one after the other, calls for the same key
 * included. At most
 * {@code capacity} calls wait; past that a call fails at once with
 * {@link IdempotencyStoreException} (answered 503).
 *
 * <p>Every call's stage completes on the statement thread, with the batch's answer for it or,
 * when the batch fails as a whole, with that failure. Thread-safe and lock-free on the calling
 * side: an event loop may submit.
 *
 * @param <R> a call
 * @param <T> its answer
 */
final class StatementBatcher<R, T> {

    /** Runs one batch on a statement thread: one answer per call, in order. */
    @FunctionalInterface
    interface Work<R, T> {
        List<T> run(List<R> calls);
    }

    /** Where batches run: refuses (returns false) when it cannot take more work. */
    @FunctionalInterface
    interface Runner {
        boolean tryRun(Runnable batch);
    }

    private final String operation;
    private final Runner runner;
    private final Work<R, T> work;
    private final ToIntFunction<R> weight;
    private final IntSupplier maxRunning;
    private final int maxBatch;
    private final long maxWeight;
    private final int capacity;

    private final ConcurrentLinkedQueue<Pending<R, T>> queue = new ConcurrentLinkedQueue<>();
    private final AtomicInteger queued = new AtomicInteger();
    private final AtomicInteger running = new AtomicInteger();
    private final AtomicLong batches = new AtomicLong();

    /**
     * @param operation  what the calls are, for messages (e.g. {@code acquire})
     * @param runner     runs a batch on a statement thread
     * @param work       executes one batch
     * @param weight     a call's weight against {@code maxWeight}
     * @param maxRunning how many batches may run at once (read when a batch starts; the store's
     *                   threads, settled on first use)
     * @param maxBatch   how many calls a batch takes at most, at least 1
     * @param maxWeight  how much weight a batch takes at most (its first call always fits)
     * @param capacity   how many calls may wait, at least 1
     */
    StatementBatcher(String operation, Runner runner, Work<R, T> work, ToIntFunction<R> weight, IntSupplier maxRunning, int maxBatch, long maxWeight, int capacity) {
        this.operation = operation;
        this.runner = runner;
        this.work = work;
        this.weight = weight;
        this.maxRunning = maxRunning;
        this.maxBatch = Math.max(1, maxBatch);
        this.maxWeight = maxWeight;
        this.capacity = Math.max(1, capacity);
    }

    /** @return the call's answer, completed on a statement thread */
    CompletableFuture<T> submit(R call) {
        CompletableFuture<T> answer = new CompletableFuture<>();
        if (queued.incrementAndGet() > capacity) {
            queued.decrementAndGet();
            answer.completeExceptionally(new IdempotencyStoreException("PostgreSQL idempotency store saturated ("
                + operation + "): " + capacity + " calls waiting for the database"));
            return answer;
        }
        queue.add(new Pending<>(call, answer));
        startBatch();
        return answer;
    }

    /** @return how many batches ran so far (for tests and metrics) */
    long batches() {
        return batches.get();
    }

    private void startBatch() {
        int max = Math.max(1, maxRunning.getAsInt());
        int r;
        do {
            r = running.get();
            if (r >= max) {
                return; // a running batch takes the call when it is done
            }
        } while (!running.compareAndSet(r, r + 1));
        if (!runner.tryRun(this::drain)) {
            running.decrementAndGet();
            failQueued(new IdempotencyStoreException("PostgreSQL idempotency store cannot run " + operation
                + ": its statement threads are closed or saturated"));
        }
    }

    /** Runs batches until nothing waits, then lets go of its slot (and re-checks, so nothing is stranded). */
    private void drain() {
        Pending<R, T> carried = null;
        try {
            List<Pending<R, T>> batch = new ArrayList<>();
            while (true) {
                batch.clear();
                long total = 0;
                if (carried != null) {
                    batch.add(carried);
                    total = weight.applyAsInt(carried.call);
                    carried = null;
                }
                Pending<R, T> next;
                while (batch.size() < maxBatch && (next = queue.poll()) != null) {
                    queued.decrementAndGet();
                    int w = weight.applyAsInt(next.call);
                    if (!batch.isEmpty() && total + w > maxWeight) {
                        carried = next; // the first of the next batch
                        break;
                    }
                    batch.add(next);
                    total += w;
                }
                if (batch.isEmpty()) {
                    break;
                }
                run(batch);
            }
        } finally {
            if (carried != null) { // only when something above failed unexpectedly
                carried.answer.completeExceptionally(new IdempotencyStoreException(
                    "PostgreSQL idempotency store: " + operation + " was not run"));
            }
            running.decrementAndGet();
            if (!queue.isEmpty()) {
                startBatch();
            }
        }
    }

    private void run(List<Pending<R, T>> batch) {
        batches.incrementAndGet();
        List<R> calls = new ArrayList<>(batch.size());
        for (Pending<R, T> p : batch) {
            calls.add(p.call);
        }
        List<T> answers;
        try {
            answers = work.run(calls);
        } catch (Throwable e) {
            for (Pending<R, T> p : batch) {
                p.answer.completeExceptionally(e);
            }
            return;
        }
        for (int i = 0; i < batch.size(); i++) {
            batch.get(i).answer.complete(answers.get(i));
        }
    }

    private void failQueued(IdempotencyStoreException e) {
        Pending<R, T> p;
        while ((p = queue.poll()) != null) {
            queued.decrementAndGet();
            p.answer.completeExceptionally(e);
        }
    }

    private record Pending<R, T>(R call, CompletableFuture<T> answer) {
    }
}
