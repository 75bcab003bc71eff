package dev.idempotency.benchmarks.load;

import io.micronaut.http.HttpRequest;
import io.micronaut.http.MutableHttpResponse;
import io.micronaut.http.ServerHttpRequest;
import io.micronaut.http.annotation.RequestFilter;
import io.micronaut.http.annotation.ServerFilter;
import io.micronaut.http.body.AvailableByteBody;
import io.micronaut.http.body.CloseableAvailableByteBody;
import io.micronaut.http.filter.FilterContinuation;
import org.reactivestreams.Publisher;
import org.reactivestreams.Subscriber;
import org.reactivestreams.Subscription;

import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;

/**
 * The floor under any filter like ours: a non-blocking {@code @RequestFilter} that copies the
 * request body (as a fingerprinting filter must) and passes the request on, with nothing else.
 * It has the idempotency filter's shape (a {@code CompletionStage} result, a reactive
 * continuation), so the route under it ({@code /floor/echo}) costs what Micronaut's filter
 * machinery and one body copy cost; the idempotency filter's own work is what it costs beyond
 * that.
 */
@ServerFilter("/floor/**")
final class FloorFilter {

    static volatile int sink; // keeps the copy from being optimised away

    @RequestFilter
    CompletionStage<MutableHttpResponse<?>> filter(HttpRequest<?> request,
                                                   FilterContinuation<Publisher<MutableHttpResponse<?>>> continuation) {
        copyBody(request);
        return proceed(continuation);
    }

    /** Copies the request's body, as a filter that fingerprints it must. */
    static void copyBody(HttpRequest<?> request) {
        if (request instanceof ServerHttpRequest<?> server && server.byteBody() instanceof AvailableByteBody body) {
            try (CloseableAvailableByteBody copy = body.split()) {
                sink = copy.toByteArray().length;
            }
        }
    }

    /** @return the rest of the chain's one response, as a stage */
    static CompletableFuture<MutableHttpResponse<?>> proceed(
        FilterContinuation<Publisher<MutableHttpResponse<?>>> continuation) {
        CompletableFuture<MutableHttpResponse<?>> response = new CompletableFuture<>();
        continuation.proceed().subscribe(new Subscriber<>() {
            @Override
            public void onSubscribe(Subscription s) {
                s.request(Long.MAX_VALUE);
            }

            @Override
            public void onNext(MutableHttpResponse<?> r) {
                response.complete(r);
            }

            @Override
            public void onError(Throwable t) {
                response.completeExceptionally(t);
            }

            @Override
            public void onComplete() {
                if (!response.isDone()) {
                    response.completeExceptionally(new IllegalStateException("no response"));
                }
            }
        });
        return response;
    }
}
