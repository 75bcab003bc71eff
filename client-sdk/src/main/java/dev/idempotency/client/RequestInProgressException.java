package dev.idempotency.client;

/**
 * The last attempt still got the filter's 409 {@code idempotency-request-in-progress}
 * (CONTRACT S11, C9): the original request with this key is still running on the server. Retry
 * later with {@link #key()} and the same payload to get its result.
 */
public class RequestInProgressException extends RetriesExhaustedException {

    /**
     * @param message  what happened
     * @param key      the key every attempt carried
     * @param attempts how many requests were sent
     * @param response the last response, or {@code null}
     * @param problem  its problem body, or {@code null}
     * @param cause    the last I/O failure, or {@code null}
     */
    public RequestInProgressException(String message, String key, int attempts, IdempotentResult<byte[]> response,
        ProblemDetails problem, Throwable cause) {
        super(message, key, attempts, response, problem, cause);
    }
}
