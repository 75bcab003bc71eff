package dev.idempotency.messaging;

/** The outbox could not store or read its messages; the cause says why. */
public class OutboxException extends RuntimeException {

    public OutboxException(String message, Throwable cause) {
        super(message, cause);
    }

    public OutboxException(String message) {
        super(message);
    }
}
