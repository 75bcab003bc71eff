package dev.idempotency.client.internal;

import dev.idempotency.client.DeadlineExceededException;
import dev.idempotency.client.IdempotencyKeyReusedException;
import dev.idempotency.client.IdempotentClient;
import dev.idempotency.client.IdempotentClientConfig;
import dev.idempotency.client.IdempotentRequestException;
import dev.idempotency.client.IdempotentResult;
import dev.idempotency.client.NonRetryableStatusException;
import dev.idempotency.client.ProblemDetails;
import dev.idempotency.client.RequestInProgressException;
import dev.idempotency.client.RetriesExhaustedException;
import dev.idempotency.client.RetryBudgetExhaustedException;
import dev.idempotency.client.internal.metrics.ClientMetrics;
import dev.idempotency.client.internal.metrics.ClientTracing;
import dev.idempotency.client.internal.policy.Attempt;
import dev.idempotency.client.internal.policy.Classifier;
import dev.idempotency.client.internal.policy.Keys;
import dev.idempotency.client.internal.policy.RetryAfter;
import dev.idempotency.client.internal.policy.RetryBudget;
import io.github.resilience4j.retry.Retry;
import io.micronaut.core.type.Argument;
import io.micronaut.http.HttpResponse;
import io.micronaut.http.MediaType;
import io.micronaut.http.client.exceptions.HttpClientResponseException;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import java.io.IOException;
import java.time.Duration;
import java.time.Instant;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;
import java.util.concurrent.TimeoutException;

/**
 * One operation's attempts: the retry loop shared by the programmatic API and the declarative
 * calls. Its steps run one after the other, never concurrently; a subclass says how an attempt
 * is sent ({@link #send}), what success returns ({@link #success}) and where a step runs
 * ({@link #dispatch}).
 *
 * @param <R> what the operation completes with
 */
abstract class AttemptLoop<R> {
    static final byte[] EMPTY = new byte[0];
    private static final Logger LOG = LoggerFactory.getLogger(IdempotentClient.class);
    private static final Argument<Map<String, Object>> JSON_OBJECT = Argument.mapOf(String.class, Object.class);

    final DefaultIdempotentClient client;
    final IdempotentClientConfig config;
    private final ClientMetrics metrics;
    final String key;
    /** Where the key came from: derived (C11) or not, for the operation's span. */
    private final Keys.Chosen chosen;
    final String headerValue;
    final Instant deadline;
    final Retry.AsyncContext<Attempt> engine;
    final RetryBudget budget;
    final String target;
    final boolean replayable;
    final CompletableFuture<R> promise = new CompletableFuture<>();
    int attempts;
    /** The operation's span, started with its first attempt (CONTRACT O4). */
    private ClientTracing.OperationSpan span = ClientTracing.OperationSpan.NONE;

    AttemptLoop(DefaultIdempotentClient client, Keys.Chosen chosen, String target, boolean replayable) {
        this.client = client;
        this.config = client.config();
        this.metrics = client.metrics;
        this.chosen = chosen;
        this.key = chosen.key();
        this.headerValue = Keys.headerValue(key, config.keyFormat());
        this.deadline = config.clock().instant().plus(config.deadline());
        this.engine = client.retry().asyncContext();
        this.target = target;
        this.budget = client.budgets == null ? null : client.budgets.forTarget(target);
        this.replayable = replayable;
    }

    /** Sends one attempt; the future never fails with an {@link HttpClientResponseException}. */
    abstract CompletableFuture<Sent> send(Duration timeout, int number);

    /** @return the operation's result from its final successful attempt */
    abstract R success(Sent sent, int number);

    /** @return the operation for the retry log line, e.g. {@code POST /payments} */
    abstract String describe();

    /** Runs the next step: at once (programmatic) or on the caller's thread (declarative). */
    void dispatch(Runnable step) {
        step.run();
    }

    void schedule() {
        dispatch(this::next);
    }

    Duration remaining() {
        return Duration.between(config.clock().instant(), deadline);
    }

    void next() {
        if (promise.isDone()) {
            return; // cancelled by the caller
        }
        try {
            Duration remaining = remaining();
            if (remaining.isNegative() || remaining.isZero()) {
                fail("deadline-exceeded", new DeadlineExceededException("the deadline of " + config.deadline()
                    + " passed before attempt " + (attempts + 1), key, attempts, null, null, null));
                return;
            }
            if (attempts == 0) {
                span = client.tracing.start(describe(), key, chosen.step(), chosen.operationId());
            }
            attempts++;
            metrics.attempt();
            boolean deadlineBound = remaining.compareTo(config.attemptTimeout()) < 0;
            Duration timeout = deadlineBound ? remaining : config.attemptTimeout();
            int number = attempts;
            ClientTracing.AttemptSpan attempt = span.attempt(number);
            CompletableFuture<Sent> sending;
            try (attempt) {
                sending = send(timeout, number);
            }
            sending.whenComplete((sent, failure) -> {
                attempt.end(sent == null ? 0 : sent.response().status(), failure);
                try {
                    handle(number, sent, failure, deadlineBound);
                } catch (Throwable t) {
                    fail("error", wrap(t));
                }
            });
        } catch (Throwable t) {
            fail("error", wrap(t));
        }
    }

    IdempotentResult<byte[]> snapshot(HttpResponse<?> response, int number) {
        byte[] body = response.getBody(byte[].class).orElse(EMPTY);
        Map<String, List<String>> headers = response.getHeaders().asMap();
        boolean replayed = response.getHeaders().get(config.replayedHeaderName()) != null
            && "true".equalsIgnoreCase(response.getHeaders().get(config.replayedHeaderName()).trim());
        return new IdempotentResult<>(response.code(), headers, body, body, replayed, number, key);
    }

    void handle(int number, Sent sent, Throwable failure, boolean deadlineBound) {
        if (failure != null) {
            Throwable cause = failure instanceof CompletionException && failure.getCause() != null ? failure.getCause() : failure;
            if (deadlineBound && cause instanceof TimeoutException) {
                fail("deadline-exceeded", new DeadlineExceededException("the deadline of " + config.deadline()
                    + " passed during attempt " + number, key, number, null, null, cause));
                return;
            }
            if (!Classifier.isRetryableFailure(cause)) {
                engine.onError(cause); // ignored by the engine: publishes RetryOnIgnoredErrorEvent
                fail("error", new IdempotentRequestException("the request failed with an error that is not retried",
                    key, number, null, null, cause));
                return;
            }
            retryOrFail(number, null, cause);
            return;
        }
        IdempotentResult<byte[]> response = sent.response();
        ProblemDetails problem = problem(response);
        // a declarative method that returned normally succeeded (Micronaut returns 404 as null/empty, not an error)
        Classifier.Verdict verdict = sent.returned() ? Classifier.Verdict.SUCCESS
            : Classifier.classify(response.status(), problem, config.retryableStatuses());
        Attempt attempt = new Attempt(number, response, problem, verdict,
            RetryAfter.parse(response.header("Retry-After").orElse(null), config.clock().instant()).orElse(null));
        if (verdict == Classifier.Verdict.RETRY) {
            retryOrFail(number, attempt, null);
            return;
        }
        engine.onResult(attempt);
        engine.onComplete();
        if (budget != null && response.status() < 500) {
            budget.onSuccess();
        }
        if (verdict == Classifier.Verdict.SUCCESS) {
            R result = success(sent, number);
            metrics.outcome(response.replayed() ? "replayed" : "success");
            span.end(response.replayed() ? "replayed" : "success", response.replayed(), number, null);
            promise.complete(result);
        } else if (response.status() == 422 && problem != null && problem.hasCode(ProblemDetails.KEY_REUSED)) {
            fail("key-reused", new IdempotencyKeyReusedException(
                "the server refused the request: this Idempotency-Key was already used with a different request "
                    + "(not retried; use a new key for a new operation, or resend the original payload)",
                key, number, response, problem, null));
        } else {
            fail("non-retryable", new NonRetryableStatusException("the server answered " + response.status()
                + (response.status() == 409 ? " (a conflict from the application, not the in-flight 409; not retried)" : ", which is not retried"),
                key, number, response, problem, null));
        }
    }

    void retryOrFail(int number, Attempt attempt, Throwable cause) {
        IdempotentResult<byte[]> response = attempt == null ? null : attempt.response();
        ProblemDetails problem = attempt == null ? null : attempt.problem();
        String reason = attempt != null ? Classifier.reason(attempt) : Classifier.reason(cause);
        boolean inProgress = response != null && response.status() == 409;
        if (!replayable) {
            tellEngineFinal(attempt, cause);
            fail("retries-exhausted", new RetriesExhaustedException("attempt " + number + " failed (" + reason
                + ") and the body is a stream that cannot be sent again, so it is not retried", key, number, response, problem, cause));
            return;
        }
        if (number >= config.maxAttempts()) {
            tellEngineFinal(attempt, cause);
            String message = "all " + number + " attempts failed; the last with " + reason;
            fail(inProgress ? "in-progress" : "retries-exhausted", inProgress
                ? new RequestInProgressException(message + ": the original request with this key is still running; "
                    + "retry later with the same key and payload", key, number, response, problem, cause)
                : new RetriesExhaustedException(message, key, number, response, problem, cause));
            return;
        }
        Duration remaining = remaining();
        if (attempt != null && attempt.retryAfter() != null && attempt.retryAfter().compareTo(remaining) >= 0) {
            fail("deadline-exceeded", new DeadlineExceededException("attempt " + number + " got " + reason
                + " with Retry-After " + attempt.retryAfter().toSeconds() + " s, past the deadline (" + remaining.toMillis()
                + " ms left); not waiting", key, number, response, problem, cause));
            return;
        }
        long interval = attempt != null ? engine.onResult(attempt) : engine.onError(cause);
        if (interval < 0) {
            fail("retries-exhausted", new RetriesExhaustedException("attempt " + number + " failed (" + reason
                + ") and the retry engine refused another attempt", key, number, response, problem, cause));
            return;
        }
        Duration wait = Duration.ofMillis(interval);
        if (wait.compareTo(remaining) >= 0) {
            fail("deadline-exceeded", new DeadlineExceededException("attempt " + number + " failed (" + reason
                + ") and the next wait of " + wait.toMillis() + " ms would end after the deadline ("
                + remaining.toMillis() + " ms left)", key, number, response, problem, cause));
            return;
        }
        // last: a token is spent only on a retry that will really be sent
        if (budget != null && !budget.tryAcquire()) {
            fail("budget-exhausted", new RetryBudgetExhaustedException("attempt " + number + " failed (" + reason
                + ") and the retry budget of " + target + " is empty; failing fast instead of retrying",
                key, number, response, problem, cause));
            return;
        }
        // C10: exactly one line per retry
        LOG.info("Idempotent {}: attempt {} of {} failed ({}); retrying in {} ms with Idempotency-Key {}",
            describe(), number, config.maxAttempts(), reason, wait.toMillis(), key);
        metrics.retry(attempt != null ? Classifier.reasonTag(attempt) : Classifier.reasonTag(cause));
        span.retry(number, wait, reason);
        config.sleeper().sleep(wait).whenComplete((ignored, error) -> {
            if (error != null) {
                fail("error", wrap(error));
            } else {
                schedule();
            }
        });
    }

    void tellEngineFinal(Attempt attempt, Throwable cause) {
        if (attempt != null) {
            engine.onResult(attempt);
            engine.onComplete();
        } else {
            engine.onError(cause);
        }
    }

    void fail(String outcome, Throwable error) {
        metrics.outcome(outcome);
        span.end(outcome, false, attempts, error);
        promise.completeExceptionally(error);
    }

    IdempotentRequestException wrap(Throwable t) {
        return t instanceof IdempotentRequestException e ? e
            : new IdempotentRequestException("the idempotent operation failed", key, attempts, null, null, t);
    }

    ProblemDetails problem(IdempotentResult<byte[]> response) {
        if (response.status() < 400 || response.bodyBytes().length == 0) {
            return null;
        }
        String type = response.header("Content-Type").orElse("");
        if (!type.toLowerCase(java.util.Locale.ROOT).startsWith(MediaType.APPLICATION_JSON_PROBLEM)) {
            return null;
        }
        try {
            Map<String, Object> json = client.mapper().readValue(response.bodyBytes(), JSON_OBJECT);
            Object status = json.get("status");
            return new ProblemDetails(string(json.get("type")), string(json.get("code")), string(json.get("title")),
                string(json.get("detail")), status instanceof Number n ? n.intValue() : 0);
        } catch (IOException | RuntimeException unreadable) {
            return null;
        }
    }

    /** What one attempt produced: the response (status, headers, bytes) and, for a declarative call, what the method returned. */
    record Sent(IdempotentResult<byte[]> response, @io.micronaut.core.annotation.Nullable Object value, boolean returned) {
    }

    private static String string(Object value) {
        return value == null ? null : value.toString();
    }
}
