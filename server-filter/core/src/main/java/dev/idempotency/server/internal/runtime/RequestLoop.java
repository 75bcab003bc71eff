package dev.idempotency.server.internal.runtime;

import io.micronaut.core.annotation.Internal;
import io.netty.util.concurrent.EventExecutor;
import io.netty.util.internal.ThreadExecutorMap;

import java.util.concurrent.CancellationException;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.Executor;
import java.util.concurrent.Future;
import java.util.concurrent.RejectedExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.function.BiConsumer;

/**
 * The thread a request's work continues on after an asynchronous step: the server's event loop
 * that received the request (Netty's), captured when the filter starts. Stores complete their
 * stages on their own threads (a Redis client's I/O thread, a JDBC executor); the filter hops
 * back here before it runs the route or hands a response on, so application code and the rest
 * of the server's pipeline never run on a store's thread. The hop costs nothing extra: the
 * response would have to be handed to this loop for writing anyway.
 *
 * <p>When the filter does not start on a Netty event loop (another server runtime, or an earlier
 * filter moved the request elsewhere), work continues on whichever thread completed the step.
 */
@Internal
public final class RequestLoop implements Executor {

    /** Whether Netty is on the class path (it is optional for this module). */
    public static final boolean NETTY = present("io.netty.util.internal.ThreadExecutorMap");
    private static final RequestLoop INLINE = new RequestLoop(null);

    private final Object executor; // an EventExecutor when Netty is present, else null

    private RequestLoop(Object executor) {
        this.executor = executor;
    }

    /** @return the event loop of the calling thread, or an inline one when it is not an event loop */
    public static RequestLoop current() {
        if (NETTY) {
            EventExecutor e = ThreadExecutorMap.currentExecutor();
            if (e != null) {
                return new RequestLoop(e);
            }
        }
        return INLINE;
    }

    /** @return whether the calling thread is this loop (always, for the inline one) */
    public boolean inLoop() {
        return executor == null || ((EventExecutor) executor).inEventLoop();
    }

    /**
     * Runs {@code command} on this loop; inline for the inline loop, and inline too when the loop
     * refuses it (the server is shutting down), so a request that outlived its loop is still
     * settled (its result stored or its key released) rather than left to its lease.
     */
    @Override
    public void execute(Runnable command) {
        if (executor == null) {
            command.run();
            return;
        }
        try {
            ((EventExecutor) executor).execute(command);
        } catch (RejectedExecutionException e) {
            command.run();
        }
    }

    /**
     * Runs {@code task} on this loop after {@code delayNanos} (Netty's own timer: nothing waits,
     * and the task runs where the request continues); without a loop, on {@code fallback}.
     *
     * @return {@code false} when the loop (or {@code fallback}) refuses the task because the
     *     server is shutting down: then {@code task} will never run
     */
    public boolean schedule(Runnable task, long delayNanos, IdempotencyScheduler fallback) {
        if (executor == null) {
            return fallback.schedule(task, delayNanos, TimeUnit.NANOSECONDS) != null;
        }
        try {
            ((EventExecutor) executor).schedule(task, delayNanos, TimeUnit.NANOSECONDS);
            return true;
        } catch (RejectedExecutionException e) {
            return false;
        }
    }

    /**
     * Runs {@code task} on this loop after {@code delayNanos}, by the loop's own timer, when the
     * caller is on the loop: a timer that is set and cancelled by the loop's own thread touches
     * nothing another thread writes.
     *
     * @return the timer, to cancel; {@code null} when the caller is not on a Netty event loop or
     *     the loop refuses the task (it is shutting down): then nothing was scheduled
     */
    public Future<?> scheduleHere(Runnable task, long delayNanos) {
        if (executor == null || !inLoop()) {
            return null;
        }
        try {
            return ((EventExecutor) executor).schedule(task, delayNanos, TimeUnit.NANOSECONDS);
        } catch (RejectedExecutionException e) {
            return null;
        }
    }

    /**
     * @return a stage that completes like {@code stage}, on this loop: at once when {@code stage}
     *     is already complete and the caller is on the loop, else by a task handed to the loop
     */
    public <T> CompletableFuture<T> resume(CompletionStage<T> stage) {
        CompletableFuture<T> f = stage.toCompletableFuture();
        if (executor == null || (f.isDone() && inLoop())) {
            return f;
        }
        CompletableFuture<T> resumed = new CompletableFuture<>();
        whenComplete(f, (value, failure) -> complete(resumed, value, failure));
        return resumed;
    }

    /**
     * Runs {@code then} with the outcome of {@code stage} (its value, or its failure), on this
     * loop: at once when {@code stage} is already complete and the caller is on the loop, else
     * from the thread that completes it when that is the loop, else by a task handed to the loop.
     * What {@link #resume} does, without a stage in between for a caller that goes on with a
     * callback. Never waits; when the loop has shut down, {@code then} runs on the completing
     * thread (see {@link #execute}).
     */
    public <T> void whenComplete(CompletableFuture<T> stage, BiConsumer<? super T, ? super Throwable> then) {
        if (stage.isDone() && inLoop()) {
            acceptNow(stage, then);
            return;
        }
        stage.whenComplete((value, failure) -> {
            if (inLoop()) {
                then.accept(value, failure);
            } else {
                execute(() -> then.accept(value, failure));
            }
        });
    }

    /**
     * Completes {@code target} like {@code source}: at once when {@code source} is complete, else
     * when it completes, on its thread. Never waits.
     */
    public static <T> void relay(CompletableFuture<? extends T> source, CompletableFuture<T> target) {
        if (source.isDone()) {
            acceptNow(source, (value, failure) -> complete(target, value, failure));
        } else {
            source.whenComplete((value, failure) -> complete(target, value, failure));
        }
    }

    /**
     * Hands the outcome of a stage that is already complete to {@code then}, read with
     * {@code getNow}, which cannot wait (its failure is thrown as by {@code join}).
     */
    private static <T> void acceptNow(CompletableFuture<T> done, BiConsumer<? super T, ? super Throwable> then) {
        T value = null;
        Throwable failure = null;
        try {
            value = done.getNow(null);
        } catch (CompletionException | CancellationException e) {
            failure = e;
        }
        then.accept(value, failure);
    }

    private static <T> void complete(CompletableFuture<T> f, T value, Throwable failure) {
        if (failure != null) {
            f.completeExceptionally(failure);
        } else {
            f.complete(value);
        }
    }

    private static boolean present(String className) {
        try {
            Class.forName(className, false, RequestLoop.class.getClassLoader());
            return true;
        } catch (ClassNotFoundException | LinkageError e) {
            return false;
        }
    }
}
