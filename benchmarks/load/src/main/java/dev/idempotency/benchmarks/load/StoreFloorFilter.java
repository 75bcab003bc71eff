package dev.idempotency.benchmarks.load;

import dev.idempotency.server.store.IdempotencyStore;
import io.micronaut.context.annotation.Requires;
import io.micronaut.http.HttpRequest;
import io.micronaut.http.MutableHttpResponse;
import io.micronaut.http.annotation.RequestFilter;
import io.micronaut.http.annotation.ServerFilter;
import io.micronaut.http.filter.FilterContinuation;
import io.netty.util.internal.ThreadExecutorMap;
import org.reactivestreams.Publisher;

import java.util.concurrent.CompletionStage;
import java.util.concurrent.Executor;

/**
 * The floor under the filter on a remote store: {@link FloorFilter}'s work plus the store's two
 * round trips, made where the filter makes them: one {@link IdempotencyStore#probe()} (for Redis,
 * a {@code PING}) on the request's event loop before the route runs, where the filter acquires,
 * and one after it, back on that loop, where the filter stores the result; nothing else. On that
 * loop the Redis store uses its connection of the loop, as it does for the filter.
 * The route under it ({@code /store-floor/echo}) costs what two store round trips cost a
 * non-blocking filter on this machine, event-loop wake-ups included, which a round trip timed
 * from a blocking socket leaves out. What the idempotency filter adds beyond it is its own work
 * and the time the store spends on the filter's commands (a script, where a {@code PING} is
 * almost free).
 */
@ServerFilter("/store-floor/**")
@Requires(beans = IdempotencyStore.class)
final class StoreFloorFilter {

    private final IdempotencyStore store;

    StoreFloorFilter(IdempotencyStore store) {
        this.store = store;
    }

    @RequestFilter
    CompletionStage<MutableHttpResponse<?>> filter(HttpRequest<?> request,
                                                   FilterContinuation<Publisher<MutableHttpResponse<?>>> continuation) {
        FloorFilter.copyBody(request);
        // the route completes on its own executor; the second round trip leaves from the request's
        // event loop, on that loop's connection, as the filter's completion does
        Executor loop = ThreadExecutorMap.currentExecutor();
        Executor back = loop == null ? Runnable::run : loop;
        return store.probe()
            .thenCompose(before -> FloorFilter.proceed(continuation))
            .thenComposeAsync(response -> store.probe().thenApply(after -> response), back);
    }
}
