package dev.idempotency.client;

/**
 * Every attempt failed with something worth retrying (CONTRACT C4): a connection failure or reset,
 * a timeout, or 408, 425, 429, 500, 502, 503, 504; and the configured attempts are used up. Also
 * thrown after one attempt when the body is a stream that cannot be sent twice (C8). The
 * operation may or may not have run: retry it later with {@link #key()}.
 */
public class RetriesExhaustedException extends IdempotentRequestException {

    /**
     * @param message  what happened
     * @param key      the key every attempt carried
     * @param attempts how many requests were sent
     * @param response the last response, or {@code null}
     * @param problem  its problem body, or {@code null}
     * @param cause    the last I/O failure, or {@code null}
     */
    public RetriesExhaustedException(String message, String key, int attempts, IdempotentResult<byte[]> response,
        ProblemDetails problem, Throwable cause) {
        super(message, key, attempts, response, problem, cause);
    }
}
