package dev.idempotency.client;

/**
 * The server answered 422 {@code idempotency-key-reused} (CONTRACT S9, C9): this key was already
 * used with a different request (other payload, path or query). Never retried. It usually means
 * a key was reused for a new operation, or the payload changed between retries; use a new key
 * for a new operation, and resend an operation only with its original payload.
 */
public class IdempotencyKeyReusedException extends NonRetryableStatusException {

    /**
     * @param message  what happened
     * @param key      the key every attempt carried
     * @param attempts how many requests were sent
     * @param response the last response, or {@code null}
     * @param problem  its problem body, or {@code null}
     * @param cause    the last I/O failure, or {@code null}
     */
    public IdempotencyKeyReusedException(String message, String key, int attempts, IdempotentResult<byte[]> response,
        ProblemDetails problem, Throwable cause) {
        super(message, key, attempts, response, problem, cause);
    }
}
