package dev.idempotency.store.redis;

import dev.idempotency.server.store.IdempotencyStoreException;

import java.time.Duration;
import java.util.ArrayDeque;
import java.util.Queue;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentLinkedQueue;

/**
 * The command timeout, without a timer per command: every call joins one first-in-first-out
 * queue with its deadline, and a periodic {@link #expire()} fails the calls at its head whose
 * deadline has passed. All calls share one timeout, so deadlines are in queue order and a check
 * stops at the first call still in time; calls that finished are dropped when they reach the
 * head. A call is failed at most one tick late.
 *
 * <p>Shared deadlines are tracked from any thread and expired by a tick on another; confined ones
 * ({@link #confined()}) belong to one event loop, which tracks, answers and expires its own calls,
 * so no queue node is shared between threads.
 */
final class CommandDeadlines {

    private final long timeoutNanos;
    private final String timeoutText;
    private final Queue<Pending> queue;

    /** Deadlines tracked from any thread. */
    CommandDeadlines(Duration timeout) {
        this(timeout.toNanos(), timeout.toString(), new ConcurrentLinkedQueue<>());
    }

    private CommandDeadlines(long timeoutNanos, String timeoutText, Queue<Pending> queue) {
        this.timeoutNanos = timeoutNanos;
        this.timeoutText = timeoutText;
        this.queue = queue;
    }

    /** @return deadlines with the same timeout that only one thread (an event loop) tracks and expires */
    CommandDeadlines confined() {
        return new CommandDeadlines(timeoutNanos, timeoutText, new ArrayDeque<>());
    }

    /** Fails {@code call} with a timeout unless it completes within the command timeout. */
    void track(CompletableFuture<?> call) {
        queue.offer(new Pending(call, System.nanoTime() + timeoutNanos));
    }

    /** Fails the calls whose deadline passed; cheap when there are none. */
    void expire() {
        long now = System.nanoTime();
        Pending head;
        while ((head = queue.peek()) != null) {
            if (!head.call.isDone()) {
                if (head.deadline - now > 0) {
                    return;
                }
                head.call.completeExceptionally(new IdempotencyStoreException(
                    "Redis idempotency store: no answer within the command timeout (" + timeoutText + ")"));
            }
            queue.poll();
        }
    }

    private record Pending(CompletableFuture<?> call, long deadline) {
    }
}
