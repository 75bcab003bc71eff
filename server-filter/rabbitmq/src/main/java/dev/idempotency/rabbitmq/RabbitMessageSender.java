package dev.idempotency.rabbitmq;

import com.rabbitmq.client.AMQP;
import com.rabbitmq.client.Channel;
import dev.idempotency.messaging.MessageSender;
import dev.idempotency.messaging.OutboxRecord;
import io.micronaut.context.annotation.Requires;
import jakarta.annotation.PreDestroy;
import jakarta.inject.Singleton;

import java.io.IOException;
import java.util.ArrayList;
import java.util.Date;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.ConcurrentHashMap;

/**
 * The outbox relay's sender on RabbitMQ (CONTRACT M3, M6): each message is published persistent
 * and mandatory, with its id as the {@code message-id} property, and counts as sent only when the
 * broker confirmed it. A message the broker cannot route (no queue bound for it) or refuses, or
 * one for an exchange that does not exist, is reported as refused, so the relay retries it and
 * eventually parks it; a broker that cannot be reached fails the whole batch, which the relay
 * waits out.
 */
@Singleton
@Requires(property = RabbitConfigurationProperties.PREFIX + ".enabled", notEquals = "false")
final class RabbitMessageSender implements MessageSender, AutoCloseable {

    private final RabbitConnection connection;
    private final Set<String> knownExchanges = ConcurrentHashMap.newKeySet();
    /** Unroutable messages the broker returned, by id, until their confirmation arrives. */
    private final Map<String, String> returned = new ConcurrentHashMap<>();
    private ConfirmingChannel channel; // guarded by this

    RabbitMessageSender(RabbitConnection connection) {
        this.connection = connection;
        knownExchanges.add(""); // the default exchange always exists
    }

    @Override
    public CompletionStage<List<String>> send(List<OutboxRecord> messages) {
        ConfirmingChannel ch;
        try {
            ch = channel();
        } catch (IOException | RuntimeException e) {
            return CompletableFuture.failedFuture(e);
        }
        List<CompletableFuture<String>> outcomes = new ArrayList<>(messages.size());
        for (OutboxRecord m : messages) {
            outcomes.add(send(ch, m));
        }
        return CompletableFuture.allOf(outcomes.toArray(CompletableFuture[]::new)).handle((v, f) -> {
            if (!ch.channel().isOpen() && outcomes.stream().anyMatch(CompletableFuture::isCompletedExceptionally)) {
                // the channel (or the connection) went down mid-batch: a failure of the batch, not of its messages
                throw new java.util.concurrent.CompletionException(new IOException("the channel to RabbitMQ went down"));
            }
            List<String> result = new ArrayList<>(outcomes.size());
            for (CompletableFuture<String> o : outcomes) {
                result.add(o.join());
            }
            return result;
        });
    }

    /** @return {@code null} once confirmed, else why not */
    private CompletableFuture<String> send(ConfirmingChannel ch, OutboxRecord m) {
        if (!exchangeExists(m.destination())) {
            return CompletableFuture.completedFuture("the exchange '" + m.destination() + "' does not exist:"
                + " declare it (idempotency.rabbitmq.exchanges." + m.destination() + ".type)");
        }
        Map<String, Object> headers = new HashMap<>(m.headers());
        AMQP.BasicProperties props = new AMQP.BasicProperties.Builder()
            .messageId(m.messageId())
            .contentType(m.contentType())
            .deliveryMode(2)
            .timestamp(Date.from(m.createdAt()))
            .headers(headers)
            .build();
        return ch.publish(m.destination(), m.routingKey(), true, props, m.body()).handle((v, failure) -> {
            String unroutable = returned.remove(m.messageId());
            if (failure != null) {
                // some brokers refuse an unroutable mandatory message (nack) rather than return it and confirm
                return unroutable != null ? unroutable : "not confirmed: " + failure.getMessage();
            }
            return unroutable;
        });
    }

    private boolean exchangeExists(String name) {
        if (knownExchanges.contains(name)) {
            return true;
        }
        // a passive declare on a channel of its own: a missing exchange closes that channel, not the publisher's
        try (Channel probe = connection.get().createChannel()) {
            probe.exchangeDeclarePassive(name);
            knownExchanges.add(name);
            return true;
        } catch (IOException | java.util.concurrent.TimeoutException | RuntimeException e) {
            return false;
        }
    }

    private synchronized ConfirmingChannel channel() throws IOException {
        if (channel != null && !channel.channel().isOpen() && connection.get().isOpen()) {
            // closed by a channel error (the client recovers channels only with their connection)
            channel.close();
            channel = null;
        }
        if (channel == null) {
            Channel ch = connection.get().createChannel();
            ch.addReturnListener(r -> {
                String id = r.getProperties() == null ? null : r.getProperties().getMessageId();
                if (id != null) {
                    returned.put(id, "unroutable: " + r.getReplyText() + " (exchange '" + r.getExchange()
                        + "', routing key '" + r.getRoutingKey() + "')");
                }
            });
            channel = new ConfirmingChannel(ch, "idempotency-rabbitmq-publisher");
        }
        return channel;
    }

    @PreDestroy
    @Override
    public synchronized void close() {
        if (channel != null) {
            channel.close();
            channel = null;
        }
    }
}
