package dev.idempotency.server;

/**
 * An {@code Idempotency-Key} value that breaks the rules of {@link IdempotencyKey}. The message
 * says what is wrong and never contains the value itself.
 */
public final class InvalidIdempotencyKeyException extends IllegalArgumentException {

    public InvalidIdempotencyKeyException(String message) {
        super(message);
    }
}
