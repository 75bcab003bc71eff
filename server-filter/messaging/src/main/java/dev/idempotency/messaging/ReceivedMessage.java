package dev.idempotency.messaging;

import dev.idempotency.messaging.internal.TraceContext;
import io.micronaut.core.annotation.Nullable;

import java.util.Map;
import java.util.Objects;
import java.util.Optional;

/**
 * A message as a consumer's handler receives it, broker-neutral. Immutable; the body is copied
 * in and out.
 *
 * @param messageId   the id the consumer de-duplicates by (the publisher's, see {@link Outbox})
 * @param body        the payload
 * @param contentType its media type, or {@code null} when the publisher set none
 * @param headers     the application headers, as the broker client reports them
 * @param source      where it was consumed from (for RabbitMQ the queue)
 * @param routingKey  how it was routed (for RabbitMQ the routing key it was published with)
 * @param redelivered whether the broker delivered it before (the broker's flag: a consumer
 *                    that did not acknowledge it, e.g. one that crashed)
 * @param attempt     how many times its handler failed before this delivery (0 the first time)
 * @param key         the record's key as UTF-8 text where the broker has one (Kafka: the ordering
 *                    key the outbox published it under), else {@code null}
 * @param partition   the partition it was consumed from where the broker has partitions (Kafka),
 *                    else -1
 */
public record ReceivedMessage(String messageId, byte[] body, @Nullable String contentType, Map<String, Object> headers,
                              String source, String routingKey, boolean redelivered, int attempt, @Nullable String key,
                              int partition) {

    /** A message from a broker without record keys or partitions (RabbitMQ). */
    public ReceivedMessage(String messageId, byte[] body, @Nullable String contentType, Map<String, Object> headers,
                           String source, String routingKey, boolean redelivered, int attempt) {
        this(messageId, body, contentType, headers, source, routingKey, redelivered, attempt, null, -1);
    }

    public ReceivedMessage {
        Objects.requireNonNull(messageId, "messageId");
        body = Objects.requireNonNull(body, "body").clone();
        headers = headers == null ? Map.of() : java.util.Collections.unmodifiableMap(new java.util.LinkedHashMap<>(headers));
        Objects.requireNonNull(source, "source");
        Objects.requireNonNull(routingKey, "routingKey");
        if (partition < -1) {
            throw new IllegalArgumentException("partition must be -1 (none) or more, was " + partition);
        }
    }

    /** @return a copy of the payload */
    @Override
    public byte[] body() {
        return body.clone();
    }

    /** @return the payload as UTF-8 text */
    public String bodyText() {
        return new String(body, java.nio.charset.StandardCharsets.UTF_8);
    }

    /** @return the {@code Idempotency-Key} of the operation that published it, when it came through an {@link Outbox} */
    public Optional<String> idempotencyKey() {
        return header(Outbox.KEY_HEADER);
    }

    /**
     * @return the W3C {@code traceparent} of the request that published it (CONTRACT M11), when it
     *     carried a well-formed one: the parent for the consumer's own span
     */
    public Optional<String> traceparent() {
        return header(TraceContext.TRACEPARENT).filter(TraceContext::valid).map(String::trim);
    }

    /** @return a header's value as text */
    public Optional<String> header(String name) {
        Object v = headers.get(name);
        return v == null ? Optional.empty() : Optional.of(v.toString());
    }

    @Override
    public boolean equals(Object o) {
        return o instanceof ReceivedMessage m && messageId.equals(m.messageId) && java.util.Arrays.equals(body, m.body)
            && Objects.equals(contentType, m.contentType) && headers.equals(m.headers) && source.equals(m.source)
            && routingKey.equals(m.routingKey) && redelivered == m.redelivered && attempt == m.attempt
            && Objects.equals(key, m.key) && partition == m.partition;
    }

    @Override
    public int hashCode() {
        return Objects.hash(messageId, java.util.Arrays.hashCode(body), source, attempt);
    }

    @Override
    public String toString() {
        return "ReceivedMessage[" + messageId + " from " + source + (partition >= 0 ? "-" + partition : "") + ", " + body.length + " bytes, attempt " + attempt
            + (redelivered ? ", redelivered" : "") + "]";
    }
}
