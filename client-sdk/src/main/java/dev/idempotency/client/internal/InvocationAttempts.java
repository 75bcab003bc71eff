package dev.idempotency.client.internal;

import dev.idempotency.client.IdempotentResult;
import io.micronaut.core.propagation.PropagatedContext;
import io.micronaut.http.HttpResponse;
import io.micronaut.http.client.exceptions.HttpClientResponseException;
import org.reactivestreams.Publisher;
import org.reactivestreams.Subscriber;
import org.reactivestreams.Subscription;

import java.time.Duration;
import java.util.Map;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.Executor;
import java.util.concurrent.LinkedBlockingQueue;

/**
 * One invocation of a declarative method: each attempt is {@code context.proceed(interceptor)}
 * (the HTTP client advice binds and sends a fresh request; the key filter adds this
 * invocation's key), run on the caller's thread through {@link CallerThreadLoop}.
 */
final class InvocationAttempts extends AttemptLoop<Object> {
    final DeclarativeCall call;
    /** The caller's thread, for a blocking method; {@code null} for an asynchronous one. */
    final CallerThreadLoop loop;
    final PropagatedContext context = PropagatedContext.getOrEmpty();
    volatile IdempotentResult<Object> result;

    InvocationAttempts(DefaultIdempotentClient client, DeclarativeCall call, boolean async) {
        super(client, call.chosenKey(), call.budgetTarget(), true);
        this.call = call;
        this.loop = async ? null : new CallerThreadLoop();
    }

    @Override
    void dispatch(Runnable step) {
        if (loop != null) {
            loop.execute(step);
            return;
        }
        try (PropagatedContext.Scope ignored = context.propagate()) {
            step.run();
        }
    }

    @Override
    String describe() {
        return call.describe();
    }

    @Override
    CompletableFuture<Sent> send(Duration timeout, int number) {
        call.beginAttempt(headerValue);
        try {
            Object value = call.proceed();
            if (loop == null) {
                return settled(call.asPublisherIfReactive(value), number);
            }
            HttpResponse<?> response = value instanceof HttpResponse<?> r ? r : call.lastResponse();
            IdempotentResult<byte[]> snapshot = response != null ? snapshot(response, number)
                : new IdempotentResult<>(200, Map.of(), EMPTY, EMPTY, false, number, key);
            return CompletableFuture.completedFuture(new Sent(snapshot, value, true));
        } catch (HttpClientResponseException e) {
            return CompletableFuture.completedFuture(new Sent(snapshot(e.getResponse(), number), null, false));
        } catch (Throwable t) {
            return CompletableFuture.failedFuture(t);
        }
    }

    /** An asynchronous method's attempt: its stage, or its publisher's first item, once there. */
    private CompletableFuture<Sent> settled(Object value, int number) {
        CompletableFuture<Object> outcome = value instanceof CompletionStage<?> stage
            ? stage.toCompletableFuture().thenApply(v -> (Object) v)
            : value instanceof Publisher<?> publisher ? first(publisher) : CompletableFuture.completedFuture(value);
        return outcome.handle((v, failure) -> {
            if (failure == null) {
                HttpResponse<?> response = v instanceof HttpResponse<?> r ? r : call.lastResponse();
                IdempotentResult<byte[]> snapshot = response != null ? snapshot(response, number)
                    : new IdempotentResult<>(200, Map.of(), EMPTY, EMPTY, false, number, key);
                return new Sent(snapshot, v, true);
            }
            Throwable t = failure instanceof CompletionException && failure.getCause() != null ? failure.getCause() : failure;
            if (t instanceof HttpClientResponseException e) {
                return new Sent(snapshot(e.getResponse(), number), null, false);
            }
            throw t instanceof CompletionException c ? c : new CompletionException(t);
        });
    }

    @Override
    Object success(Sent sent, int number) {
        IdempotentResult<byte[]> r = sent.response();
        Object value = sent.value();
        Object body = value instanceof HttpResponse<?> response ? response.getBody().orElse(null) : value;
        result = new IdempotentResult<>(r.status(), r.headers(), EMPTY, body, r.replayed(), number, key);
        return value;
    }

    /**
     * Runs the steps of a declarative call on the thread that called the method, so every attempt
     * sees that thread's context (propagated context, MDC, security) exactly as a plain call would.
     */
    static final class CallerThreadLoop implements Executor {
        private static final Runnable WAKE_UP = () -> { };
        private final BlockingQueue<Runnable> steps = new LinkedBlockingQueue<>();

        @Override
        public void execute(Runnable step) {
            steps.add(step);
        }

        <R> R drain(CompletableFuture<R> promise) throws InterruptedException, ExecutionException {
            promise.whenComplete((r, e) -> steps.add(WAKE_UP));
            while (!promise.isDone()) {
                steps.take().run();
            }
            return promise.get();
        }
    }

    /** @return the first item {@code publisher} emits, or {@code null} when it completes empty */
    private static CompletableFuture<Object> first(Publisher<?> publisher) {
        CompletableFuture<Object> first = new CompletableFuture<>();
        publisher.subscribe(new Subscriber<Object>() {
            private Subscription subscription;

            @Override
            public void onSubscribe(Subscription s) {
                subscription = s;
                s.request(1);
            }

            @Override
            public void onNext(Object item) {
                if (first.complete(item)) {
                    subscription.cancel();
                }
            }

            @Override
            public void onError(Throwable t) {
                first.completeExceptionally(t);
            }

            @Override
            public void onComplete() {
                first.complete(null);
            }
        });
        return first;
    }
}
