package dev.idempotency.server.internal.runtime;

import io.micronaut.core.annotation.Internal;
import dev.idempotency.server.IdempotencyConfigurationProperties;
import io.micronaut.context.annotation.Requires;
import jakarta.annotation.PreDestroy;
import jakarta.inject.Singleton;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import java.util.PriorityQueue;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.locks.LockSupport;

/**
 * The filter's own timer, for the lease keeper's tick and completion retries (and the pauses of
 * {@code inFlightWait} when a request has no event loop to wait on). Its tasks only start store
 * calls or complete stages; they never wait.
 *
 * <p>Scheduling never waits either, so an event-loop thread or a store client's I/O thread may
 * schedule: a task is handed to the timer thread through a lock-free queue and the thread is
 * woken; only the timer thread touches its ordering of due times. Kept apart from the
 * application's {@code scheduled} executor, so a slow store cannot delay the application's jobs
 * (or the other way round). One daemon thread, started on first use, stopped with the context.
 */
@Singleton
@Requires(property = IdempotencyConfigurationProperties.PREFIX + ".enabled", notEquals = "false")
@Internal
public final class IdempotencyScheduler {

    private static final Logger LOG = LoggerFactory.getLogger(IdempotencyScheduler.class);

    private final ConcurrentLinkedQueue<Timed> handedOver = new ConcurrentLinkedQueue<>();
    private final AtomicBoolean started = new AtomicBoolean();
    private final AtomicLong sequence = new AtomicLong();
    private volatile Thread thread;
    private volatile boolean closed;

    /** A scheduled task; {@link #cancel()} keeps it from running. */
    public interface Cancellable {
        void cancel();
    }

    /**
     * Runs {@code task} once, after {@code delay}.
     *
     * @return the task, to cancel; {@code null} when the scheduler has stopped (its context is
     *     closing): then {@code task} will never run, and the caller must go on without it
     */
    public Cancellable schedule(Runnable task, long delay, TimeUnit unit) {
        return add(new Timed(task, System.nanoTime() + unit.toNanos(delay), 0, sequence.incrementAndGet()));
    }

    /**
     * Runs {@code task} every {@code period}, the first time after one period, until cancelled.
     *
     * @return the task, to cancel; {@code null} when the scheduler has stopped
     */
    public Cancellable scheduleEvery(Runnable task, long period, TimeUnit unit) {
        long nanos = Math.max(1, unit.toNanos(period));
        return add(new Timed(task, System.nanoTime() + nanos, nanos, sequence.incrementAndGet()));
    }

    private Timed add(Timed timed) {
        if (closed) {
            return null;
        }
        handedOver.offer(timed);
        if (started.compareAndSet(false, true)) {
            Thread t = new Thread(this::run, "idempotency-timer");
            t.setDaemon(true);
            thread = t;
            t.start();
        } else {
            LockSupport.unpark(thread);
        }
        return timed;
    }

    /** The timer thread: takes what was handed over, runs what is due, sleeps until the next due time. */
    private void run() {
        PriorityQueue<Timed> due = new PriorityQueue<>();
        while (!closed) {
            Timed t;
            while ((t = handedOver.poll()) != null) {
                due.add(t);
            }
            long now = System.nanoTime();
            while ((t = due.peek()) != null && t.at - now <= 0) {
                due.poll();
                if (t.cancelled) {
                    continue;
                }
                try {
                    t.task.run();
                } catch (RuntimeException | Error e) {
                    LOG.error("idempotency timer task failed", e);
                }
                if (t.period > 0 && !t.cancelled) {
                    t.at += t.period; // only this thread reads or writes a task's due time
                    due.add(t);
                }
            }
            Timed next = due.peek();
            if (handedOver.isEmpty()) {
                if (next == null) {
                    LockSupport.park(this);
                } else {
                    LockSupport.parkNanos(this, next.at - System.nanoTime());
                }
            }
        }
    }

    @PreDestroy
    public void close() {
        closed = true;
        Thread t = thread;
        if (t != null) {
            LockSupport.unpark(t);
        }
    }

    /** One task and when it is due; equal due times run in scheduling order. */
    private static final class Timed implements Cancellable, Comparable<Timed> {
        final Runnable task;
        final long period;
        final long seq;
        long at;
        volatile boolean cancelled;

        Timed(Runnable task, long at, long period, long seq) {
            this.task = task;
            this.at = at;
            this.period = period;
            this.seq = seq;
        }

        @Override
        public void cancel() {
            cancelled = true;
        }

        @Override
        public int compareTo(Timed other) {
            int c = Long.compare(at - other.at, 0);
            return c != 0 ? c : Long.compare(seq, other.seq);
        }
    }
}
