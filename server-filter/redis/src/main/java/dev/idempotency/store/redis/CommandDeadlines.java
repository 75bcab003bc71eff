package dev.idempotency.store.redis;

import dev.idempotency.server.store.IdempotencyStoreException;

import java.time.Duration;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentLinkedQueue;

/**
 * The command timeout, without a timer per command: every call joins one first-in-first-out
 * queue with its deadline, and a periodic {@link #expire()} fails the calls at its head whose
 * deadline has passed. All calls share one timeout, so deadlines are in queue order and a check
 * stops at the first call still in time; calls that finished are dropped when they reach the
 * head. A call is failed at most one tick late.
 */
final class CommandDeadlines {

    private final long timeoutNanos;
    private final String timeoutText;
    private final ConcurrentLinkedQueue<Pending> queue = new ConcurrentLinkedQueue<>();

    CommandDeadlines(Duration timeout) {
        this.timeoutNanos = timeout.toNanos();
        this.timeoutText = timeout.toString();
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

    /** @return how many calls are tracked, finished ones included until they reach the head */
    int size() {
        return queue.size();
    }

    private record Pending(CompletableFuture<?> call, long deadline) {
    }
}
