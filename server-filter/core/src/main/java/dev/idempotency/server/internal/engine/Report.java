package dev.idempotency.server.internal.engine;

import io.micronaut.core.annotation.Internal;
import dev.idempotency.server.IdempotencyConfigurationProperties;
import dev.idempotency.server.internal.telemetry.IdempotencyMetrics;
import dev.idempotency.server.internal.telemetry.Outcome;
import io.micronaut.context.annotation.Requires;
import io.micronaut.http.HttpRequest;
import jakarta.inject.Singleton;

import static dev.idempotency.server.internal.telemetry.FilterLog.LOG;

/**
 * Where the request flow says what it did (CONTRACT S22): one counter per outcome and, at
 * DEBUG, one log line naming the outcome and the key's hash, never the raw key or the body.
 */
@Singleton
@Requires(property = IdempotencyConfigurationProperties.PREFIX + ".enabled", notEquals = "false")
@Internal
public final class Report {

    private final IdempotencyMetrics metrics;

    Report(IdempotencyMetrics metrics) {
        this.metrics = metrics;
    }

    IdempotencyMetrics metrics() {
        return metrics;
    }

    void outcome(Outcome outcome, RecordKey key, HttpRequest<?> request) {
        outcome(outcome, "", key, request);
    }

    /** A request whose handler ran; {@code resumed} when one of its durable steps came from an earlier execution. */
    void executed(RecordKey key, HttpRequest<?> request, boolean resumed) {
        outcome(Outcome.EXECUTED, resumed ? " resumed=true" : "", key, request);
    }

    private void outcome(Outcome outcome, String detail, RecordKey key, HttpRequest<?> request) {
        metrics.outcome(outcome);
        if (LOG.isDebugEnabled()) {
            LOG.debug("idempotency outcome={}{} key={} {} {}", outcome.tag, detail, key, request.getMethodName(),
                request.getPath());
        }
    }

    /** A request rejected before it had a key (missing, invalid, too large). */
    public void rejected() {
        metrics.outcome(Outcome.REJECTED);
    }
}
