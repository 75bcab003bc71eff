package dev.idempotency.server.internal.engine;

import dev.idempotency.server.IdempotencyConfigurationProperties;
import dev.idempotency.server.IdempotencyOutcome;
import dev.idempotency.server.IdempotencyOutcomeEvent;
import dev.idempotency.server.internal.telemetry.IdempotencyMetrics;
import dev.idempotency.server.internal.telemetry.RequestTracing;
import dev.idempotency.server.store.AcquireResult;
import dev.idempotency.server.store.IdempotencyStore;
import dev.idempotency.server.store.StoreType;
import dev.idempotency.server.store.StoredResponse;
import io.micronaut.context.annotation.Requires;
import io.micronaut.context.event.ApplicationEventPublisher;
import io.micronaut.core.annotation.Internal;
import io.micronaut.core.annotation.Nullable;
import io.micronaut.core.propagation.PropagatedContext;
import io.micronaut.http.HttpRequest;
import jakarta.inject.Singleton;

import static dev.idempotency.server.internal.telemetry.FilterLog.LOG;

/**
 * Where the request flow says what it did: one counter per outcome and, at DEBUG, one log line
 * naming the outcome and the key's hash, never the raw key or the body (CONTRACT S22); the
 * request's span attributes when tracing is on, and one {@link IdempotencyOutcomeEvent} (O4).
 */
@Singleton
@Requires(property = IdempotencyConfigurationProperties.PREFIX + ".enabled", notEquals = "false")
@Internal
public final class Report {

    private final IdempotencyMetrics metrics;
    private final ApplicationEventPublisher<IdempotencyOutcomeEvent> events;
    private final @Nullable RequestTracing tracing;
    /** The store's name on the spans ({@code idempotency.store}), known when the filter is made: no lookup on a request. */
    private final String storeName;

    Report(IdempotencyMetrics metrics, ApplicationEventPublisher<IdempotencyOutcomeEvent> events,
           @Nullable RequestTracing tracing, IdempotencyStore store) {
        this.metrics = metrics;
        this.events = events;
        this.tracing = tracing;
        this.storeName = storeName(store);
    }

    IdempotencyMetrics metrics() {
        return metrics;
    }

    void outcome(IdempotencyOutcome outcome, Exchange ex) {
        outcome(outcome, "", ex);
    }

    /** A request whose handler ran; {@code resumed} when one of its durable steps came from an earlier execution. */
    void executed(Exchange ex, boolean resumed) {
        outcome(resumed ? IdempotencyOutcome.RESUMED : IdempotencyOutcome.EXECUTED, resumed ? " resumed=true" : "", ex);
    }

    /** A replay: the outcome, and the link from this request's span to the run that executed it. */
    void replayed(Exchange ex, StoredResponse response) {
        outcome(IdempotencyOutcome.REPLAYED, "", ex);
        if (tracing != null) {
            tracing.linkTo(ex.context(), response.traceparent(), RequestTracing.REPLAY_OF);
        }
    }

    /** A 409: the outcome, and the link from this request's span to the run in progress, when its record kept it. */
    void conflict(Exchange ex, AcquireResult.InProgress inProgress) {
        outcome(IdempotencyOutcome.CONFLICT, "", ex);
        if (tracing != null) {
            tracing.linkTo(ex.context(), inProgress.traceparent(), RequestTracing.IN_PROGRESS);
        }
    }

    /** @return this request's trace context to keep with its in-progress record, or {@code null} without tracing */
    @Nullable
    String traceparent(Exchange ex) {
        return tracing == null ? null : tracing.traceparent(ex.context());
    }

    /** @return the span of the durable step {@code name} of this execution (CONTRACT O4), a no-op without tracing */
    RequestTracing.StepSpan step(Exchange ex, String name) {
        return tracing == null ? RequestTracing.StepSpan.NONE : tracing.step(ex.context(), name);
    }

    /** @return {@code stored} with this request's trace context when tracing is on, for a replay's link */
    StoredResponse traced(Exchange ex, StoredResponse stored) {
        if (tracing == null || stored == null) {
            return stored;
        }
        String traceparent = traceparent(ex);
        return traceparent == null ? stored : stored.withTraceparent(traceparent);
    }

    private void outcome(IdempotencyOutcome outcome, String detail, Exchange ex) {
        // the counter's tags predate RESUMED, which it counts as executed (S22)
        metrics.outcome(outcome == IdempotencyOutcome.RESUMED ? IdempotencyOutcome.EXECUTED : outcome);
        HttpRequest<?> request = ex.request();
        if (LOG.isDebugEnabled()) {
            LOG.debug("idempotency outcome={}{} key={} {} {}", outcome.tag(), detail, ex.key(), request.getMethodName(),
                request.getPath());
        }
        String route = ex.policy().scopeOperation(request.getMethodName());
        String keyHash = ex.key().hash();
        if (tracing != null) {
            tracing.outcome(ex.context(), outcome, keyHash, route, storeName);
        }
        events.publishEvent(new IdempotencyOutcomeEvent(outcome, keyHash, route, request));
    }

    /** A request rejected before it had a key (missing, invalid, too large). */
    public void rejected(HttpRequest<?> request, RoutePolicy policy) {
        metrics.outcome(IdempotencyOutcome.REJECTED);
        String route = policy.scopeOperation(request.getMethodName());
        if (tracing != null) {
            tracing.outcome(PropagatedContext.getOrEmpty(), IdempotencyOutcome.REJECTED, null, route, storeName);
        }
        events.publishEvent(new IdempotencyOutcomeEvent(IdempotencyOutcome.REJECTED, null, route, request));
    }

    /** @return the store's name as {@code idempotency.store.type} says it: {@code memory}, {@code redis}, {@code postgres} or its class */
    private static String storeName(IdempotencyStore store) {
        String type = store.getClass().getName();
        return type.contains(".memory.") ? StoreType.MEMORY : type.contains(".redis.") ? StoreType.REDIS
            : type.contains(".postgres.") ? StoreType.POSTGRES : store.getClass().getSimpleName();
    }
}
