package dev.idempotency.server;

import io.micronaut.core.annotation.Nullable;
import io.micronaut.http.HttpRequest;

import java.util.Objects;

/**
 * Published through Micronaut's {@code ApplicationEventPublisher} once for every request under
 * the Idempotency-Key contract, when the filter knows what it did with it (CONTRACT O4), so that
 * business code (a metric of payments taken, an audit log) can count an operation once and never
 * a replay, without reading headers. Listen with {@code @EventListener} or an
 * {@code ApplicationEventListener<IdempotencyOutcomeEvent>}.
 *
 * <p>Listeners run on the request's thread, which is usually an event loop: they must not block
 * (hand slow work to an executor), and what they throw is logged by Micronaut, never sent to the
 * caller. {@link IdempotencyOutcome#EXECUTED} and {@link IdempotencyOutcome#RESUMED} are published
 * when the route has answered, before its response is stored; the others when the response is decided.
 *
 * @param outcome   what the filter did
 * @param keyHash   the first 12 hex digits of the record's key, as the log line and the span show it
 *                  (never the key), or {@code null} when the request was rejected before it had one
 * @param operation the route's operation: its explicit name, else method and URI template
 * @param request   the request
 */
public record IdempotencyOutcomeEvent(IdempotencyOutcome outcome, @Nullable String keyHash, String operation,
                                      HttpRequest<?> request) {

    public IdempotencyOutcomeEvent {
        Objects.requireNonNull(outcome, "outcome");
        Objects.requireNonNull(operation, "operation");
        Objects.requireNonNull(request, "request");
    }

    /** @return whether the route ran for this request ({@code executed} or {@code resumed}) */
    public boolean executed() {
        return outcome == IdempotencyOutcome.EXECUTED || outcome == IdempotencyOutcome.RESUMED;
    }
}
