package dev.idempotency.kafka;

/**
 * The record headers the Kafka module writes and reads (CONTRACT M8). Values are UTF-8 text.
 * Besides these, a record carries the outbox's own headers ({@code x-idempotency-key},
 * {@code x-idempotency-record}, {@code traceparent}) and the application's.
 */
public final class KafkaHeaders {

    /** The message's id, which consumers de-duplicate by; a record without it is dead-lettered. */
    public static final String MESSAGE_ID = "x-idempotency-message-id";
    /** The payload's media type. */
    public static final String CONTENT_TYPE = "content-type";
    /** The message's routing key, when the publisher gave one (the record key is its ordering key). */
    public static final String ROUTING_KEY = "x-idempotency-routing-key";
    /** On a dead-lettered record: why it was given up on. */
    public static final String DEAD_LETTER_REASON = "x-idempotency-dead-letter-reason";
    /** On a dead-lettered record: where it came from, {@code topic-partition@offset}. */
    public static final String ORIGIN = "x-idempotency-origin";

    private KafkaHeaders() {
    }
}
