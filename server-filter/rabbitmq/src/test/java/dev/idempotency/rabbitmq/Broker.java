package dev.idempotency.rabbitmq;

import com.rabbitmq.client.AMQP;
import com.rabbitmq.client.Channel;
import com.rabbitmq.client.Connection;
import com.rabbitmq.client.ConnectionFactory;
import com.rabbitmq.client.GetResponse;

import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;

/** A test's own connection to the broker, to publish and inspect around the module under test. */
final class Broker implements AutoCloseable {

    private final Connection connection;
    private final Channel channel;

    Broker(String uri) throws Exception {
        ConnectionFactory f = new ConnectionFactory();
        f.setUri(uri);
        f.setAutomaticRecoveryEnabled(false);
        connection = f.newConnection("idempotency-test");
        channel = connection.createChannel();
        channel.confirmSelect();
    }

    /** Publishes {@code body} to queue {@code queue} (default exchange) with the message id {@code id}, confirmed. */
    void send(String queue, String id, String body) throws Exception {
        AMQP.BasicProperties.Builder props = new AMQP.BasicProperties.Builder().contentType("application/json")
            .deliveryMode(2);
        if (id != null) {
            props.messageId(id);
        }
        channel.basicPublish("", queue, true, props.build(), body.getBytes(StandardCharsets.UTF_8));
        channel.waitForConfirmsOrDie(10_000);
    }

    /** @return every message now in {@code queue}, taken off it */
    List<GetResponse> drain(String queue) throws Exception {
        List<GetResponse> all = new ArrayList<>();
        GetResponse r;
        while ((r = channel.basicGet(queue, true)) != null) {
            all.add(r);
        }
        return all;
    }

    long count(String queue) throws Exception {
        return channel.messageCount(queue);
    }

    /** Deletes the queues and exchanges a consumer of {@code queue} declared. */
    void deleteTopology(String queue) {
        for (String q : List.of(queue, queue + ".retry", queue + ".dead")) {
            try (Channel ch = connection.createChannel()) {
                ch.queueDelete(q);
            } catch (Exception e) {
                // already gone
            }
        }
        try (Channel ch = connection.createChannel()) {
            ch.exchangeDelete(queue + ".dlx");
        } catch (Exception e) {
            // already gone
        }
    }

    /** Declares a durable direct {@code exchange} and a durable {@code queue} bound to it with {@code key}. */
    void bind(String exchange, String queue, String key) throws Exception {
        channel.exchangeDeclare(exchange, "direct", true);
        channel.queueDeclare(queue, true, false, false, null);
        channel.queueBind(queue, exchange, key);
    }

    void deleteQueueAndExchange(String queue, String exchange) throws Exception {
        try (Channel ch = connection.createChannel()) {
            ch.queueDelete(queue);
            ch.exchangeDelete(exchange);
        }
    }

    static String header(GetResponse r, String name) {
        Map<String, Object> h = r.getProps().getHeaders();
        Object v = h == null ? null : h.get(name);
        return v == null ? null : v.toString();
    }

    @Override
    public void close() throws Exception {
        connection.close();
    }
}
