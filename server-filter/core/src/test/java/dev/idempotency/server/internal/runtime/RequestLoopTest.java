package dev.idempotency.server.internal.runtime;

import io.netty.channel.DefaultEventLoop;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.DisplayName;
import org.junit.jupiter.api.Test;

import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicReference;

import static org.assertj.core.api.Assertions.assertThat;

/** The request's loop: callbacks and relayed results go on where the request runs. */
class RequestLoopTest {

    private static final DefaultEventLoop EVENT_LOOP = new DefaultEventLoop();

    @AfterAll
    static void stop() {
        EVENT_LOOP.shutdownGracefully(0, 1, TimeUnit.SECONDS);
    }

    @Test
    @DisplayName("a callback on a completed stage runs at once, on the caller's loop, with the value or the failure")
    void completedStagesGoOnAtOnce() throws Exception {
        RequestLoop loop = EVENT_LOOP.submit(RequestLoop::current).get();
        CompletableFuture<Thread> ran = new CompletableFuture<>();
        EVENT_LOOP.execute(() -> {
            Thread caller = Thread.currentThread();
            AtomicReference<Thread> callback = new AtomicReference<>();
            loop.whenComplete(CompletableFuture.completedFuture("v"), (v, f) -> callback.set(Thread.currentThread()));
            // set before whenComplete returned: no task was handed to the loop
            ran.complete(callback.get() == caller ? caller : null);
        });
        assertThat(ran.get(5, TimeUnit.SECONDS)).isNotNull();

        CompletableFuture<Throwable> failure = new CompletableFuture<>();
        EVENT_LOOP.execute(() -> loop.whenComplete(CompletableFuture.failedFuture(new IllegalStateException("x")),
            (v, f) -> failure.complete(f)));
        assertThat(failure.get(5, TimeUnit.SECONDS)).isInstanceOf(CompletionException.class)
            .hasCauseInstanceOf(IllegalStateException.class);
    }

    @Test
    @DisplayName("a stage completed after its loop shut down still goes on, on the completing thread")
    void aLoopThatShutDownDoesNotLoseTheCallback() throws Exception {
        DefaultEventLoop gone = new DefaultEventLoop();
        RequestLoop loop = gone.submit(RequestLoop::current).get();
        CompletableFuture<String> stage = new CompletableFuture<>();
        CompletableFuture<Thread> where = new CompletableFuture<>();
        loop.whenComplete(stage, (v, f) -> where.complete(Thread.currentThread()));
        assertThat(gone.shutdownGracefully(0, 1, TimeUnit.SECONDS).await(5, TimeUnit.SECONDS)).isTrue();
        stage.complete("late"); // as a store's thread would, after the server stopped
        assertThat(where.getNow(null)).isSameAs(Thread.currentThread());
    }

    @Test
    @DisplayName("a stage completed on another thread goes on on the request's loop")
    void otherThreadsHandBack() throws Exception {
        RequestLoop loop = EVENT_LOOP.submit(RequestLoop::current).get();
        Thread loopThread = EVENT_LOOP.submit(Thread::currentThread).get();
        CompletableFuture<String> stage = new CompletableFuture<>();
        CompletableFuture<Thread> where = new CompletableFuture<>();
        CompletableFuture<String> value = new CompletableFuture<>();
        loop.whenComplete(stage, (v, f) -> {
            where.complete(Thread.currentThread());
            value.complete(v);
        });
        Thread completer = new Thread(() -> stage.complete("done"));
        completer.start();
        assertThat(where.get(5, TimeUnit.SECONDS)).isSameAs(loopThread);
        assertThat(value.get()).isEqualTo("done");
    }

    @Test
    @DisplayName("outside an event loop, callbacks run where the stage completes")
    void inlineOutsideAnEventLoop() {
        RequestLoop loop = RequestLoop.current(); // the test's thread is no event loop
        CompletableFuture<String> stage = new CompletableFuture<>();
        AtomicReference<String> got = new AtomicReference<>();
        loop.whenComplete(stage, (v, f) -> got.set(v));
        assertThat(got.get()).isNull();
        stage.complete("later");
        assertThat(got.get()).isEqualTo("later");
    }

    @Test
    @DisplayName("relay hands on a value or a failure, at once or when it comes")
    void relay() {
        CompletableFuture<String> now = new CompletableFuture<>();
        RequestLoop.relay(CompletableFuture.completedFuture("a"), now);
        assertThat(now.join()).isEqualTo("a");

        CompletableFuture<String> source = new CompletableFuture<>();
        CompletableFuture<String> later = new CompletableFuture<>();
        RequestLoop.relay(source, later);
        assertThat(later).isNotDone();
        source.completeExceptionally(new IllegalArgumentException("y"));
        assertThat(later).isCompletedExceptionally();
        assertThat(later.handle((v, f) -> f).join()).isInstanceOf(IllegalArgumentException.class);

        CompletableFuture<String> failed = new CompletableFuture<>();
        RequestLoop.relay(CompletableFuture.failedFuture(new IllegalArgumentException("z")), failed);
        assertThat(failed.handle((v, f) -> f).join()).isInstanceOf(CompletionException.class)
            .hasCauseInstanceOf(IllegalArgumentException.class);
    }

    @Test
    @DisplayName("S11: an in-flight wait's next attempt is timed on the request's loop, or on the fallback timer"
        + " outside one; once either has shut down it is refused, and the caller is told so (it answers 409 then)")
    void schedulingIsRefusedAfterShutdown() throws Exception {
        IdempotencyScheduler fallback = new IdempotencyScheduler();
        try {
            RequestLoop loop = EVENT_LOOP.submit(RequestLoop::current).get();
            Thread loopThread = EVENT_LOOP.submit(Thread::currentThread).get();
            CompletableFuture<Thread> ran = new CompletableFuture<>();
            assertThat(loop.schedule(() -> ran.complete(Thread.currentThread()), 1_000_000, fallback)).isTrue();
            assertThat(ran.get(5, TimeUnit.SECONDS)).isSameAs(loopThread);

            DefaultEventLoop gone = new DefaultEventLoop();
            RequestLoop goneLoop = gone.submit(RequestLoop::current).get();
            assertThat(gone.shutdownGracefully(0, 1, TimeUnit.SECONDS).await(5, TimeUnit.SECONDS)).isTrue();
            assertThat(goneLoop.schedule(() -> { }, 1_000_000, fallback)).isFalse();

            RequestLoop inline = RequestLoop.current(); // the test's thread is no event loop
            CompletableFuture<Thread> timed = new CompletableFuture<>();
            assertThat(inline.schedule(() -> timed.complete(Thread.currentThread()), 1_000_000, fallback)).isTrue();
            assertThat(timed.get(5, TimeUnit.SECONDS).getName()).isEqualTo("idempotency-timer");
            fallback.close();
            assertThat(inline.schedule(() -> { }, 1_000_000, fallback)).isFalse();
        } finally {
            fallback.close();
        }
    }
}
