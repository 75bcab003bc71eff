package dev.idempotency.client;

/**
 * The overall deadline of the operation (CONTRACT C6) left no room for another attempt: it
 * passed, the next backoff wait would end after it, or the server's {@code Retry-After} points
 * past it (C5; then the client stops at once instead of waiting in vain).
 */
public class DeadlineExceededException extends IdempotentRequestException {

    /**
     * @param message  what happened
     * @param key      the key every attempt carried
     * @param attempts how many requests were sent
     * @param response the last response, or {@code null}
     * @param problem  its problem body, or {@code null}
     * @param cause    the last I/O failure, or {@code null}
     */
    public DeadlineExceededException(String message, String key, int attempts, IdempotentResult<byte[]> response,
        ProblemDetails problem, Throwable cause) {
        super(message, key, attempts, response, problem, cause);
    }
}
