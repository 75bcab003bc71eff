package dev.idempotency.client.internal.policy;

import dev.idempotency.client.ProblemDetails;
import io.micronaut.core.annotation.Internal;
import io.micronaut.core.annotation.Nullable;
import io.micronaut.http.client.exceptions.ReadTimeoutException;
import io.micronaut.http.client.exceptions.ResponseClosedException;

import java.io.IOException;
import java.util.Set;
import java.util.concurrent.TimeoutException;

/**
 * What is retried (CONTRACT C4).
 *
 * <p>Retried: connection failures and resets, timeouts, and the configured statuses (default
 * 408, 425, 429, 500, 502, 503, 504 and 409). A 409 is retried ONLY when it is the filter's own
 * in-flight answer ({@code application/problem+json} with code
 * {@code idempotency-request-in-progress}): a 409 from the handler itself (say "payment already
 * captured") is a business result the server stored and replays for this key, so a retry could
 * only get the same 409. Everything else (400, 401, 403, 404, 413, 422, other 4xx) is final.
 */
@Internal
public final class Classifier {

    public enum Verdict {
        /** 1xx-3xx: the operation's answer. */
        SUCCESS,
        /** Worth another attempt with the same key. */
        RETRY,
        /** A final error answer: retrying cannot change it. */
        FAIL
    }

    private Classifier() {
    }

    public static Verdict classify(int status, @Nullable ProblemDetails problem, Set<Integer> retryable) {
        if (status < 400) {
            return Verdict.SUCCESS;
        }
        if (status == 409) {
            return retryable.contains(409) && problem != null && problem.hasCode(ProblemDetails.REQUEST_IN_PROGRESS)
                ? Verdict.RETRY : Verdict.FAIL;
        }
        return retryable.contains(status) ? Verdict.RETRY : Verdict.FAIL;
    }

    /** @return whether a failure without a response (connection refused or reset, timeout) is retried */
    public static boolean isRetryableFailure(Throwable failure) {
        for (Throwable t = failure; t != null; t = t.getCause() == t ? null : t.getCause()) {
            if (t instanceof IOException || t instanceof TimeoutException
                || t instanceof ReadTimeoutException || t instanceof ResponseClosedException) {
                return true;
            }
        }
        return false;
    }

    /** @return a short reason for the log line */
    public static String reason(Attempt attempt) {
        int status = attempt.response().status();
        if (status == 409) {
            return "409 " + ProblemDetails.REQUEST_IN_PROGRESS;
        }
        return attempt.problem() != null && attempt.problem().code() != null
            ? status + " " + attempt.problem().code() : "status " + status;
    }

    /** @return a low-cardinality metric tag */
    public static String reasonTag(Attempt attempt) {
        return attempt.response().status() == 409 ? "in-progress" : "status-" + attempt.response().status();
    }

    public static String reason(Throwable failure) {
        return isTimeout(failure) ? "timeout" : "I/O failure: " + describe(failure);
    }

    public static String reasonTag(Throwable failure) {
        return isTimeout(failure) ? "timeout" : "io";
    }

    public static boolean isTimeout(Throwable failure) {
        for (Throwable t = failure; t != null; t = t.getCause() == t ? null : t.getCause()) {
            if (t instanceof TimeoutException || t instanceof ReadTimeoutException) {
                return true;
            }
        }
        return false;
    }

    private static String describe(Throwable failure) {
        Throwable root = failure;
        while (root.getCause() != null && root.getCause() != root) {
            root = root.getCause();
        }
        return root.getClass().getSimpleName() + (root.getMessage() != null ? " (" + root.getMessage() + ")" : "");
    }
}
