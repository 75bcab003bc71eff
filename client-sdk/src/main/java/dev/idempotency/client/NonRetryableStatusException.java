package dev.idempotency.client;

/**
 * A response whose status is never retried (CONTRACT C4): 400, 401, 403, 404, 413, 422 and the
 * other 4xx, any status not in the retryable set, and a 409 that is not the filter's
 * {@code idempotency-request-in-progress} problem (a business conflict the server stored and
 * replays: retrying it can only return the same 409). Sending the same request again cannot
 * change the answer.
 */
public class NonRetryableStatusException extends IdempotentRequestException {

    /**
     * @param message  what happened
     * @param key      the key every attempt carried
     * @param attempts how many requests were sent
     * @param response the last response, or {@code null}
     * @param problem  its problem body, or {@code null}
     * @param cause    the last I/O failure, or {@code null}
     */
    public NonRetryableStatusException(String message, String key, int attempts, IdempotentResult<byte[]> response,
        ProblemDetails problem, Throwable cause) {
        super(message, key, attempts, response, problem, cause);
    }
}
