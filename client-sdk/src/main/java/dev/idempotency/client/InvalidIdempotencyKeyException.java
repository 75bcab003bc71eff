package dev.idempotency.client;

/**
 * A caller-supplied key that the server would refuse (CONTRACT C1, S5): empty, longer than 255
 * characters, not printable ASCII, or not sendable as a bare token when {@link KeyFormat#BARE}
 * is set. Thrown before any request is sent. The message never repeats the key.
 */
public class InvalidIdempotencyKeyException extends IllegalArgumentException {

    /**
     * @param message what is wrong with the key
     */
    public InvalidIdempotencyKeyException(String message) {
        super(message);
    }
}
