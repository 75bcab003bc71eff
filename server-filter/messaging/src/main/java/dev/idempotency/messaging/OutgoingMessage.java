package dev.idempotency.messaging;

import io.micronaut.core.annotation.Nullable;

import java.nio.charset.StandardCharsets;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.Objects;

/**
 * A message to publish through the {@link Outbox}, broker-neutral. Immutable; the body is copied
 * in and out.
 *
 * @param destination where it goes: for RabbitMQ the exchange ({@code ""} is the default
 *                    exchange, which routes to the queue named by the routing key)
 * @param routingKey  how the destination routes it: for RabbitMQ the routing key
 * @param body        the payload, exactly as it will be sent
 * @param contentType the payload's media type, e.g. {@code application/json}
 * @param headers     application headers, in order; the outbox adds its own ({@link Outbox})
 * @param orderingKey messages with the same ordering key are delivered in the order they were
 *                    published; {@code null} orders them per operation (its record id)
 */
public record OutgoingMessage(String destination, String routingKey, byte[] body, String contentType,
                              Map<String, String> headers, @Nullable String orderingKey) {

    public OutgoingMessage {
        Objects.requireNonNull(destination, "destination");
        Objects.requireNonNull(routingKey, "routingKey");
        Objects.requireNonNull(body, "body");
        Objects.requireNonNull(contentType, "contentType");
        body = body.clone();
        headers = headers == null ? Map.of() : java.util.Collections.unmodifiableMap(new LinkedHashMap<>(headers));
    }

    /**
     * A JSON message.
     *
     * @param destination the exchange (RabbitMQ), {@code ""} for the default exchange
     * @param routingKey  the routing key (with the default exchange: the queue)
     * @param json        the JSON text
     * @return the message, without headers, ordered per operation
     */
    public static OutgoingMessage json(String destination, String routingKey, String json) {
        return new OutgoingMessage(destination, routingKey, json.getBytes(StandardCharsets.UTF_8), "application/json",
            Map.of(), null);
    }

    /** @return a copy of the payload */
    @Override
    public byte[] body() {
        return body.clone();
    }

    /** @return this message with one more header */
    public OutgoingMessage withHeader(String name, String value) {
        Map<String, String> h = new LinkedHashMap<>(headers);
        h.put(Objects.requireNonNull(name, "name"), Objects.requireNonNull(value, "value"));
        return new OutgoingMessage(destination, routingKey, body, contentType, h, orderingKey);
    }

    /** @return this message, ordered with every other message of {@code key} */
    public OutgoingMessage orderedBy(String key) {
        return new OutgoingMessage(destination, routingKey, body, contentType, headers, Objects.requireNonNull(key, "key"));
    }

    @Override
    public boolean equals(Object o) {
        return o instanceof OutgoingMessage m && destination.equals(m.destination) && routingKey.equals(m.routingKey)
            && java.util.Arrays.equals(body, m.body) && contentType.equals(m.contentType) && headers.equals(m.headers)
            && Objects.equals(orderingKey, m.orderingKey);
    }

    @Override
    public int hashCode() {
        return Objects.hash(destination, routingKey, java.util.Arrays.hashCode(body), contentType, headers, orderingKey);
    }

    @Override
    public String toString() {
        return "OutgoingMessage[" + destination + "/" + routingKey + ", " + body.length + " bytes " + contentType + "]";
    }
}
