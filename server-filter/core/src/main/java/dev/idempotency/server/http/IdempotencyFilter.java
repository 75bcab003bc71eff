package dev.idempotency.server.http;

import dev.idempotency.server.IdempotencyConfiguration;
import dev.idempotency.server.IdempotencyConfigurationProperties;
import dev.idempotency.server.internal.engine.Coordinator;
import dev.idempotency.server.internal.engine.Exchange;
import dev.idempotency.server.internal.engine.RoutePolicy;
import dev.idempotency.server.internal.http.RequestReader;
import dev.idempotency.server.internal.http.RoutePolicies;
import dev.idempotency.server.internal.response.HeaderNames;
import dev.idempotency.server.internal.response.Responses;
import dev.idempotency.server.internal.runtime.RequestLoop;
import dev.idempotency.server.internal.telemetry.FilterLog;
import io.micronaut.context.annotation.Requires;
import io.micronaut.core.order.Ordered;
import io.micronaut.core.propagation.PropagatedContext;
import io.micronaut.http.HttpRequest;
import io.micronaut.http.MutableHttpResponse;
import io.micronaut.http.annotation.RequestFilter;
import io.micronaut.http.annotation.ServerFilter;
import io.micronaut.http.filter.ConditionalFilter;
import io.micronaut.http.filter.FilterContinuation;
import io.micronaut.http.filter.ServerFilterPhase;
import org.reactivestreams.Publisher;

import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;
import java.util.function.Supplier;

import static io.micronaut.http.annotation.Filter.MATCH_ALL_PATTERN;

/**
 * Enforces the Idempotency-Key contract (CONTRACT S1-S22) on routes marked {@link Idempotent},
 * for the configured methods (POST and PATCH by default). Other requests pass through untouched.
 *
 * <p>For each covered request: {@code RequestReader} parses the key, reads the body (up to the
 * configured cap) and computes the store key and the fingerprint; {@code Coordinator} makes one
 * atomic acquire through the route's execution mode and then runs the handler (keeping its
 * lease alive, storing or releasing its result), replays the stored response byte for byte with
 * {@code Idempotent-Replayed: true}, or answers with a problem response. In transactional mode
 * (CONTRACT S18) acquire, handler and completion run in one transaction of the store.
 *
 * <h2>Threads</h2>
 * The filter never blocks a thread. It runs on the server's event loop, reads the body as it
 * arrives, and continues after each asynchronous store call on the request's event loop, from
 * where the route runs on the executor it asked for: blocking controllers on their
 * {@code @ExecuteOn} executor, reactive ones ({@code Publisher}, {@code Mono},
 * {@code CompletableFuture}) on the event loop. Controllers that block must therefore say so
 * with {@code @ExecuteOn(TaskExecutors.BLOCKING)}, as Micronaut requires anyway. The one
 * exception is transactional mode, whose attempt runs on the store's bounded transactional
 * executor because a JDBC transaction is bound to its thread.
 *
 * <p>Runs after {@link ServerFilterPhase#SECURITY}, so the authenticated principal is known.
 */
@ServerFilter(MATCH_ALL_PATTERN)
@Requires(property = IdempotencyConfigurationProperties.PREFIX + ".enabled", notEquals = "false")
public final class IdempotencyFilter implements Ordered, ConditionalFilter {

    /** The filter's order: right after the security phase. */
    public static final int ORDER = ServerFilterPhase.SECURITY.after();

    /** The header that marks a replay whose body was not stored. */
    public static final String REPLAY_DETAIL_HEADER = Responses.REPLAY_DETAIL_HEADER;

    /**
     * The log category of every line the filter writes (outcomes, store and lease warnings, the
     * startup line): {@value}, the name it had before the filter moved to this package.
     */
    public static final String LOG_CATEGORY = FilterLog.CATEGORY;

    private final RoutePolicies policies;
    private final RequestReader reader;
    private final Coordinator coordinator;
    private final CharSequence replayMarker;

    IdempotencyFilter(IdempotencyConfiguration config, RoutePolicies policies, RequestReader reader,
                      Coordinator coordinator) {
        this.policies = policies;
        this.reader = reader;
        this.coordinator = coordinator;
        this.replayMarker = HeaderNames.of(config.getReplayedHeaderName());
    }

    @Override
    public int getOrder() {
        return ORDER;
    }

    @Override
    public boolean isEnabled(HttpRequest<?> request) {
        return policies.forRequest(request) != null;
    }

    /**
     * The filter method; not for direct use.
     *
     * @param request      the request
     * @param continuation the rest of the chain
     * @return the response to send, when it is known
     */
    @RequestFilter
    public CompletionStage<MutableHttpResponse<?>> filter(HttpRequest<?> request,
                                                         FilterContinuation<Publisher<MutableHttpResponse<?>>> continuation) {
        var handler = Exchange.handler(continuation::proceed, replayMarker);
        RoutePolicy policy = policies.forRequest(request);
        if (policy == null) {
            return handler.get();
        }
        RequestLoop loop = RequestLoop.current();
        PropagatedContext context = PropagatedContext.getOrEmpty();
        CompletableFuture<RequestReader.Reading> read = reader.read(request, policy);
        if (read.isDone() && !read.isCompletedExceptionally() && loop.inLoop()) {
            // the usual case, a body that had arrived with the headers: on at once, without a stage
            try {
                return proceed(request, policy, read.getNow(null), loop, context, handler);
            } catch (RuntimeException e) {
                return CompletableFuture.failedFuture(e);
            }
        }
        // A body that streamed in completes this stage inside the server's dispatch of its last
        // chunk. The route must not start there: with a multipart body, Micronaut's Netty handler
        // could then see the response before the end of the request it answers, and mistake the
        // next request on the connection for a leftover chunk (a ClassCastException, and a hung
        // connection). So the request goes on in a task of its own on the loop.
        CompletableFuture<RequestReader.Reading> later = new CompletableFuture<>();
        read.whenComplete((reading, failure) -> loop.execute(() -> {
            if (failure != null) {
                later.completeExceptionally(failure);
            } else {
                later.complete(reading);
            }
        }));
        return later.thenCompose(reading -> proceed(request, policy, reading, loop, context, handler));
    }

    private CompletableFuture<MutableHttpResponse<?>> proceed(HttpRequest<?> request, RoutePolicy policy,
                                                             RequestReader.Reading reading, RequestLoop loop,
                                                             PropagatedContext context,
                                                             Supplier<CompletableFuture<MutableHttpResponse<?>>> handler) {
        if (reading instanceof RequestReader.Reading.Ready ready) {
            return coordinator.run(new Exchange(request, policy, ready.key(), ready.fingerprint(), ready.operation(),
                loop, context, handler));
        }
        if (reading instanceof RequestReader.Reading.Rejected rejected) {
            return CompletableFuture.completedFuture(rejected.response());
        }
        return handler.get();
    }
}
