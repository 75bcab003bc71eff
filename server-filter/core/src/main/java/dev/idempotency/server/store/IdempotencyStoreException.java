package dev.idempotency.server.store;

/**
 * Thrown by an {@link IdempotencyStore} that cannot answer: the backing storage is
 * unreachable, timed out, or full. The filter answers such requests with 503
 * {@code idempotency-store-unavailable} and does not run the handler.
 */
public class IdempotencyStoreException extends RuntimeException {

    public IdempotencyStoreException(String message) {
        super(message);
    }

    public IdempotencyStoreException(String message, Throwable cause) {
        super(message, cause);
    }
}
