package dev.idempotency.server.store;

import dev.idempotency.server.Checks;
import io.micronaut.core.annotation.Internal;

import java.util.List;
import java.util.concurrent.Executor;
import java.util.concurrent.LinkedTransferQueue;
import java.util.concurrent.RejectedExecutionException;
import java.util.concurrent.ThreadPoolExecutor;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;

/**
 * A fixed set of threads for blocking work, that an event-loop thread can hand work to without
 * ever waiting: the hand-over is lock-free (a {@link LinkedTransferQueue}, with all threads
 * started once, so the pool never takes its own lock to add one), and the bound on waiting work
 * is a counter, so a full executor refuses at once ({@link #tryExecute} returns {@code false})
 * instead of blocking or queueing without end. Used by the stores that run blocking clients (a
 * {@code BlockingStoreAdapter}, the PostgreSQL store). Threads are daemons, started on first use
 * (or by {@link #start()}), not in the constructor. Shared by the store modules; not an API.
 */
@Internal
public final class BoundedExecutor implements Executor, AutoCloseable {

    private final String name;
    private final int threads;
    private final int queueCapacity;
    private final ThreadPoolExecutor pool;
    private final AtomicInteger waiting = new AtomicInteger();
    private final AtomicBoolean started = new AtomicBoolean();

    /**
     * @param name          the threads' name prefix; they are named {@code name + N}
     * @param threads       how many tasks run at once, at least 1
     * @param queueCapacity how many more may wait, at least 1
     */
    public BoundedExecutor(String name, int threads, int queueCapacity) {
        this.name = name;
        this.threads = Checks.atLeast(threads, 1, "threads");
        this.queueCapacity = Checks.atLeast(queueCapacity, 1, "queueCapacity");
        AtomicInteger n = new AtomicInteger();
        this.pool = new ThreadPoolExecutor(threads, threads, 0, TimeUnit.MILLISECONDS, new LinkedTransferQueue<>(),
            r -> {
                Thread t = new Thread(r, name + n.incrementAndGet());
                t.setDaemon(true);
                return t;
            });
    }

    /** Starts the threads, unless they run already. */
    public void start() {
        if (started.compareAndSet(false, true)) {
            pool.prestartAllCoreThreads();
        }
    }

    /**
     * Hands {@code task} to a thread of this executor, without waiting.
     *
     * @return {@code false} when {@code queueCapacity} tasks wait already, or the executor is closed
     */
    public boolean tryExecute(Runnable task) {
        start();
        if (waiting.incrementAndGet() > queueCapacity || pool.isShutdown()) {
            waiting.decrementAndGet();
            return false;
        }
        try {
            pool.execute(new Waiting(task));
            return true;
        } catch (RejectedExecutionException e) {
            waiting.decrementAndGet();
            return false;
        }
    }

    /** Like {@link #tryExecute}, but a refusal throws {@link RejectedExecutionException}. */
    @Override
    public void execute(Runnable task) {
        if (!tryExecute(task)) {
            throw new RejectedExecutionException(describeSaturation());
        }
    }

    /** @return why a task was refused: how busy the executor is, or that it is closed */
    public String describeSaturation() {
        return pool.isShutdown() ? name + "* is closed"
            : threads + " " + name + "* threads busy and " + waiting.get() + " tasks waiting";
    }

    /** @return the number of threads */
    public int threads() {
        return threads;
    }

    /** Stops the threads; tasks still waiting are dropped. */
    @Override
    public void close() {
        shutdown();
    }

    /**
     * Stops the threads.
     *
     * @return the tasks that were still waiting, which will not run
     */
    public List<Runnable> shutdown() {
        List<Runnable> dropped = pool.shutdownNow().stream()
            .map(r -> r instanceof Waiting w ? w.task : r)
            .toList();
        waiting.addAndGet(-dropped.size());
        return dropped;
    }

    /** A task that waited; it stops counting as waiting when it starts. */
    private final class Waiting implements Runnable {
        final Runnable task;

        Waiting(Runnable task) {
            this.task = task;
        }

        @Override
        public void run() {
            waiting.decrementAndGet();
            task.run();
        }
    }

    /** @return whether {@link #close()} was called */
    public boolean isClosed() {
        return pool.isShutdown();
    }
}
