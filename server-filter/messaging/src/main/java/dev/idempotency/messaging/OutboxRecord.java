package dev.idempotency.messaging;

import java.time.Instant;
import java.util.Map;
import java.util.Objects;

/**
 * A message in the outbox: what the relay sends, with its bookkeeping. Immutable; the body is
 * shared, not copied (records are internal to the outbox and its store).
 *
 * @param id          the outbox's sequence number: the publish order
 * @param messageId   the message's id, unique in the outbox (see {@link Outbox})
 * @param orderingKey messages of one ordering key are sent in {@code id} order
 * @param destination see {@link OutgoingMessage#destination()}
 * @param routingKey  see {@link OutgoingMessage#routingKey()}
 * @param contentType see {@link OutgoingMessage#contentType()}
 * @param headers     the application's headers plus the outbox's own
 * @param body        the payload
 * @param attempts    how many times sending it failed so far
 * @param createdAt   when it was published
 */
public record OutboxRecord(long id, String messageId, String orderingKey, String destination, String routingKey,
                           String contentType, Map<String, String> headers, byte[] body, int attempts,
                           Instant createdAt) {

    public OutboxRecord {
        Objects.requireNonNull(messageId, "messageId");
        Objects.requireNonNull(orderingKey, "orderingKey");
        Objects.requireNonNull(destination, "destination");
        Objects.requireNonNull(routingKey, "routingKey");
        Objects.requireNonNull(contentType, "contentType");
        headers = Map.copyOf(headers);
        Objects.requireNonNull(body, "body");
    }
}
