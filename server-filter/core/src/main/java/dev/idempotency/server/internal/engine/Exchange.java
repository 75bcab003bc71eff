package dev.idempotency.server.internal.engine;

import dev.idempotency.context.OperationContext;
import dev.idempotency.server.IdempotentOperation;
import dev.idempotency.server.internal.runtime.RequestLoop;
import io.micronaut.core.annotation.Internal;
import io.micronaut.core.propagation.PropagatedContext;
import io.micronaut.http.HttpRequest;
import io.micronaut.http.MutableHttpResponse;
import org.reactivestreams.Publisher;
import org.reactivestreams.Subscriber;
import org.reactivestreams.Subscription;

import java.util.concurrent.CompletableFuture;
import java.util.function.Supplier;

/**
 * One covered request on its way through the filter, once its key, scope and fingerprint are
 * known: what the coordinator, the execution modes and settlement pass around instead of the
 * same parameters through every method. Immutable.
 *
 * @param request     the request
 * @param policy      the route's contract
 * @param key         the record it is about
 * @param fingerprint the request's fingerprint
 * @param operation   the operation's identity, which the route sees (CONTRACT M1)
 * @param loop        the event loop the request's work continues on
 * @param context     the request's propagated context (tracing, MDC, the request itself), for work
 *                    that continues on other threads
 * @param handler     runs the rest of the chain and the route, see {@link #handler(Supplier, String)}
 */
@Internal
public record Exchange(HttpRequest<?> request, RoutePolicy policy, RecordKey key, byte[] fingerprint,
                IdempotentOperation operation, RequestLoop loop, PropagatedContext context,
                Supplier<CompletableFuture<MutableHttpResponse<?>>> handler) {

    /**
     * Runs the route (the rest of the chain) with the operation's identity in its propagated
     * context and in the request's attributes, so the route and the code it calls see it
     * (CONTRACT M1), and with a new {@link OperationContext} for the client SDK (C11).
     *
     * @param base the context to extend: the request's own, or the one in scope on this thread
     *             (in transactional mode it holds the transaction)
     * @return the route's response, when it is known
     */
    CompletableFuture<MutableHttpResponse<?>> runHandler(PropagatedContext base) {
        request.setAttribute(IdempotentOperation.ATTRIBUTE, operation);
        // a new OperationContext per execution: the client SDK derives downstream keys from it
        // (CONTRACT C11), counting this execution's calls from one
        try (PropagatedContext.Scope ignored = base.plus(operation)
            .plus(OperationContext.start(operation.recordId())).propagate()) {
            return handler.get();
        } catch (RuntimeException e) {
            return CompletableFuture.failedFuture(e);
        }
    }

    /**
     * @param downstream    the filter continuation's response publisher, produced on call
     * @param replayMarker  the replay header, removed from original responses (CONTRACT S13); see {@link HeaderNames}
     * @return a handler that proceeds down the chain and completes with the route's response
     */
    public static Supplier<CompletableFuture<MutableHttpResponse<?>>> handler(
        Supplier<Publisher<MutableHttpResponse<?>>> downstream, CharSequence replayMarker) {
        return () -> {
            SingleResponse single = new SingleResponse(replayMarker);
            try {
                downstream.get().subscribe(single);
            } catch (RuntimeException e) {
                single.result.completeExceptionally(e);
            }
            return single.result;
        };
    }

    /** The one response of the downstream publisher, as a stage. */
    private static final class SingleResponse implements Subscriber<MutableHttpResponse<?>> {
        final CompletableFuture<MutableHttpResponse<?>> result = new CompletableFuture<>();
        private final CharSequence replayMarker;

        SingleResponse(CharSequence replayMarker) {
            this.replayMarker = replayMarker;
        }

        @Override
        public void onSubscribe(Subscription s) {
            s.request(Long.MAX_VALUE);
        }

        @Override
        public void onNext(MutableHttpResponse<?> response) {
            response.getHeaders().remove(replayMarker);
            result.complete(response);
        }

        @Override
        public void onError(Throwable t) {
            result.completeExceptionally(t);
        }

        @Override
        public void onComplete() {
            if (!result.isDone()) {
                result.completeExceptionally(new IllegalStateException("the filter chain ended without a response"));
            }
        }
    }
}
