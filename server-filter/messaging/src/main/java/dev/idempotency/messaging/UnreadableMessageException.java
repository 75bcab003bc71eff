package dev.idempotency.messaging;

/**
 * Thrown by a {@link MessageHandler} (or a {@link TransactionalMessageHandler}) for a message it
 * can never process, whatever the number of tries: a body that does not deserialize, a field that
 * is missing. The consumer dead-letters it at once, with this exception's message as the reason,
 * instead of retrying it up to {@code max-attempts} (CONTRACT M4).
 */
public class UnreadableMessageException extends RuntimeException {

    /** @param reason what is wrong with the message, for the operator reading the dead-letter queue */
    public UnreadableMessageException(String reason) {
        super(reason);
    }

    /**
     * @param reason what is wrong with the message
     * @param cause  the deserializer's failure
     */
    public UnreadableMessageException(String reason, Throwable cause) {
        super(reason, cause);
    }
}
