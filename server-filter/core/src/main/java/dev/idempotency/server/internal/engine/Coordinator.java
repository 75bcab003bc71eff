package dev.idempotency.server.internal.engine;

import io.micronaut.core.annotation.Internal;
import dev.idempotency.server.store.AcquireResult;
import dev.idempotency.server.IdempotencyConfiguration;
import dev.idempotency.server.IdempotencyConfigurationProperties;
import dev.idempotency.server.internal.runtime.IdempotencyScheduler;
import dev.idempotency.server.store.IdempotencyStoreException;
import dev.idempotency.server.IdempotencyOutcome;
import dev.idempotency.server.internal.runtime.RequestLoop;
import dev.idempotency.server.internal.response.Responses;
import dev.idempotency.server.internal.runtime.StoreCalls;
import dev.idempotency.server.internal.runtime.StoreCircuit;
import io.micronaut.context.annotation.Requires;
import io.micronaut.http.MutableHttpResponse;
import jakarta.inject.Singleton;

import java.time.Duration;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;

import static dev.idempotency.server.internal.telemetry.FilterLog.LOG;

/**
 * The single acquire loop of a covered request (CONTRACT S9-S11, S19): it has the route's
 * execution mode make an attempt and answers whatever the attempt did not execute itself: the
 * stored response (replay), 422 for another payload, 409 with {@code Retry-After} while the
 * original runs, 503 (or the handler without protection, on a fail-open route) when the store
 * cannot answer. On a route with {@code inFlightWait} a duplicate asks again every 50 ms until the
 * original finishes or the wait is over; the pause is a scheduled task, never a sleeping thread.
 */
@Singleton
@Requires(property = IdempotencyConfigurationProperties.PREFIX + ".enabled", notEquals = "false")
@Internal
public final class Coordinator {

    private static final long WAIT_POLL_NANOS = TimeUnit.MILLISECONDS.toNanos(50);
    /** The {@code waitUntil} of a route without {@code inFlightWait}. */
    private static final long NO_WAIT = Long.MIN_VALUE;

    private final IdempotencyConfiguration config;
    private final LeasedMode leased;
    private final TransactionalMode transactional;
    private final Responses responses;
    private final IdempotencyScheduler scheduler;
    private final Report report;
    private final StoreCircuit circuit;

    Coordinator(IdempotencyConfiguration config, LeasedMode leased, TransactionalMode transactional,
                Responses responses, IdempotencyScheduler scheduler, Report report, StoreCircuit circuit) {
        this.circuit = circuit;
        this.config = config;
        this.leased = leased;
        this.transactional = transactional;
        this.responses = responses;
        this.scheduler = scheduler;
        this.report = report;
    }

    /** @return the response to the request: executed, replayed or a problem */
    public CompletableFuture<MutableHttpResponse<?>> run(Exchange ex) {
        long wait = ex.policy().inFlightWait().toNanos();
        // without a wait (the default), a duplicate in flight is answered at once: no clock read
        return attempt(ex, wait <= 0 ? NO_WAIT : System.nanoTime() + wait);
    }

    private CompletableFuture<MutableHttpResponse<?>> attempt(Exchange ex, long waitUntil) {
        ExecutionMode mode = ex.policy().transactional() ? transactional : leased;
        CompletableFuture<ExecutionMode.Attempt> attempt;
        try {
            attempt = mode.attempt(ex).toCompletableFuture();
        } catch (RuntimeException e) {
            attempt = CompletableFuture.failedFuture(e);
        }
        CompletableFuture<MutableHttpResponse<?>> response = new CompletableFuture<>();
        ex.loop().whenComplete(attempt, (a, failure) -> {
            try {
                if (failure != null) {
                    response.completeExceptionally(failure);
                } else if (a instanceof ExecutionMode.Attempt.Executed executed) {
                    response.complete(executed.response());
                } else if (a instanceof ExecutionMode.Attempt.StoreFailed failed) {
                    RequestLoop.relay(storeFailure(ex, failed.failure()), response);
                } else {
                    RequestLoop.relay(answer(ex, ((ExecutionMode.Attempt.NotAcquired) a).result(), waitUntil), response);
                }
            } catch (RuntimeException | Error e) {
                response.completeExceptionally(e);
            }
        });
        return response;
    }

    /** The answer to an acquire that did not acquire: the replay, 422, 409, or another attempt later. */
    private CompletableFuture<MutableHttpResponse<?>> answer(Exchange ex, AcquireResult result, long waitUntil) {
        if (result instanceof AcquireResult.Replay replay) {
            report.replayed(ex, replay.response());
            return CompletableFuture.completedFuture(responses.replay(replay.response()));
        }
        if (result instanceof AcquireResult.Mismatch) {
            report.outcome(IdempotencyOutcome.MISMATCH, ex);
            return CompletableFuture.completedFuture(responses.keyReused());
        }
        AcquireResult.InProgress inProgress = (AcquireResult.InProgress) result;
        long remaining = waitUntil == NO_WAIT ? 0 : waitUntil - System.nanoTime();
        if (remaining > 0) {
            CompletableFuture<Void> pause = new CompletableFuture<>();
            if (ex.loop().schedule(() -> pause.complete(null), Math.min(WAIT_POLL_NANOS, remaining), scheduler)) {
                return pause.thenCompose(v -> attempt(ex, waitUntil));
            }
            // the server is shutting down and will not run the next attempt: the 409 now, not a
            // request that is never answered
        }
        report.conflict(ex, inProgress);
        return CompletableFuture.completedFuture(
            responses.inProgress(ex.policy().latency().retryAfter(ex.policy().lease(), inProgress.remainingLease(),
                config.getInFlightRetryAfterMin(), config.getInFlightRetryAfterMax())));
    }

    private CompletableFuture<MutableHttpResponse<?>> storeFailure(Exchange ex, IdempotencyStoreException e) {
        report.outcome(IdempotencyOutcome.STORE_ERROR, ex);
        if (ex.policy().failOpen()) {
            LOG.error("idempotency store unavailable, FAILING OPEN key={} route={} {}: the handler runs without"
                + " duplicate protection", ex.key(), ex.request().getMethodName(), ex.policy().template(), e);
            return ex.runHandler(ex.context());
        }
        if (e instanceof StoreCalls.CircuitOpen) {
            // the outage was logged when the circuit opened; a line per request would flood the log
            LOG.debug("idempotency store known down key={}: answering 503", ex.key());
        } else {
            LOG.error("idempotency store unavailable key={}: answering 503 ({})", ex.key(), e.toString());
        }
        // while the circuit is open, Retry-After is when the next probe may find the store back
        Duration untilProbe = circuit.untilNextProbe();
        return CompletableFuture.completedFuture(responses.storeUnavailable(
            untilProbe == null ? config.getStoreUnavailableRetryAfter() : untilProbe));
    }
}
