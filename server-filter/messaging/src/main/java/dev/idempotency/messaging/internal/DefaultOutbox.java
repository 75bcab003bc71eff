package dev.idempotency.messaging.internal;

import dev.idempotency.messaging.Outbox;
import dev.idempotency.messaging.OutboxConfigurationProperties;
import dev.idempotency.messaging.OutboxRecord;
import dev.idempotency.messaging.OutboxRelay;
import dev.idempotency.messaging.OutboxStore;
import dev.idempotency.messaging.OutgoingMessage;
import dev.idempotency.server.IdempotentOperation;
import io.micronaut.context.annotation.Requires;
import io.micronaut.core.annotation.Internal;
import io.micronaut.core.annotation.Nullable;
import jakarta.inject.Singleton;

import java.time.Clock;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.Objects;

/** The {@link Outbox}: stores through the active {@link OutboxStore} and wakes the relay. */
@Internal
@Singleton
@Requires(property = OutboxConfigurationProperties.PREFIX + ".enabled", notEquals = "false")
public final class DefaultOutbox implements Outbox {

    private final OutboxStore store;
    private final OutboxRelay relay;
    private final Clock clock;
    private final MessagingMetrics metrics;

    public DefaultOutbox(OutboxStore store, OutboxRelay relay, Clock clock, MessagingMetrics metrics) {
        this.store = store;
        this.relay = relay;
        this.clock = clock;
        this.metrics = metrics;
    }

    @Override
    public String publish(String step, OutgoingMessage message) {
        IdempotentOperation operation = IdempotentOperation.current().orElseThrow(() -> new IllegalStateException(
            "Outbox.publish(step, message) needs the operation in progress, and there is none: call it from a route"
                + " under @Idempotent (on the route's own thread), or pass the operation or a message id"));
        return publish(operation, step, message);
    }

    @Override
    public String publish(IdempotentOperation operation, String step, OutgoingMessage message) {
        Objects.requireNonNull(operation, "operation");
        String id = operation.messageId(step);
        Map<String, String> headers = new LinkedHashMap<>(message.headers());
        headers.put(KEY_HEADER, operation.key());
        headers.put(RECORD_HEADER, operation.recordId());
        append(id, message, headers, message.orderingKey() != null ? message.orderingKey() : operation.recordId());
        return id;
    }

    @Override
    public String publish(String messageId, @Nullable String idempotencyKey, OutgoingMessage message) {
        if (messageId == null || messageId.isBlank()) {
            throw new IllegalArgumentException("a message id is required");
        }
        Map<String, String> headers = new LinkedHashMap<>(message.headers());
        if (idempotencyKey != null) {
            headers.put(KEY_HEADER, idempotencyKey);
        }
        append(messageId, message, headers, message.orderingKey() != null ? message.orderingKey() : messageId);
        return messageId;
    }

    private void append(String id, OutgoingMessage message, Map<String, String> headers, String orderingKey) {
        TraceContext.addTo(headers);
        boolean added = store.append(new OutboxRecord(0, id, orderingKey, message.destination(), message.routingKey(),
            message.contentType(), headers, message.body(), 0, clock.instant()));
        metrics.published(added);
        relay.wake();
    }
}
