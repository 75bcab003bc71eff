package dev.idempotency.rabbitmq;

import com.rabbitmq.client.GetResponse;
import dev.idempotency.messaging.InMemoryOutboxStore;
import dev.idempotency.messaging.Outbox;
import dev.idempotency.messaging.OutboxRelay;
import dev.idempotency.messaging.OutgoingMessage;
import dev.idempotency.testsupport.Await;
import dev.idempotency.testsupport.TestRabbit;
import io.micronaut.context.ApplicationContext;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.DisplayName;
import org.junit.jupiter.api.Test;

import java.nio.charset.StandardCharsets;
import java.util.List;
import java.util.Map;
import java.util.UUID;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * The relay's sender on the real broker (CONTRACT M3, M6): what the broker confirms arrives with
 * its id and headers, in order; a message it cannot route, or one for an exchange that does not
 * exist, is refused, retried and parked with the reason, without holding back the others.
 */
class SenderOnRabbitTest {

    private final String exchange = "orders-" + UUID.randomUUID();
    private final String queue = "orders-q-" + UUID.randomUUID();
    private ApplicationContext ctx;

    @AfterEach
    void stop() throws Exception {
        if (ctx != null) {
            ctx.close();
        }
        try (Broker b = new Broker(TestRabbit.uri())) {
            b.deleteQueueAndExchange(queue, exchange);
        }
    }


    @Test
    @DisplayName("M3/M6: confirmed messages arrive with their id, key and headers in publish order; unroutable and"
        + " missing-exchange messages are parked with the reason, the others go on")
    void confirmedAndRefused() throws Exception {
        ctx = ApplicationContext.run(Map.of(
            "idempotency.store.redis.enabled", "false",
            "idempotency.rabbitmq.uri", TestRabbit.uri(),
            "idempotency.rabbitmq.exchanges." + exchange + ".type", "direct",
            "idempotency.outbox.max-attempts", "2",
            "idempotency.outbox.retry-backoff", "50ms",
            "idempotency.outbox.retry-backoff-max", "100ms",
            "idempotency.outbox.poll-interval", "50ms"));
        // the module declares configured exchanges with its consumers; here there are none: declare and bind by hand
        try (Broker b = new Broker(TestRabbit.uri())) {
            b.bind(exchange, queue, "placed");
            Outbox outbox = ctx.getBean(Outbox.class);
            for (int i = 0; i < 5; i++) {
                outbox.publish("order-" + i + "-placed", "order-" + i,
                    OutgoingMessage.json(exchange, "placed", "{\"n\":" + i + "}").withHeader("tenant", "acme").orderedBy("k"));
            }
            outbox.publish("unroutable-1", null, OutgoingMessage.json(exchange, "nobody-listens", "{}").orderedBy("u"));
            outbox.publish("missing-1", null, OutgoingMessage.json("no-such-exchange-" + UUID.randomUUID(), "x", "{}")
                .orderedBy("m"));
            InMemoryOutboxStore store = ctx.getBean(InMemoryOutboxStore.class);
            ctx.getBean(OutboxRelay.class).relay(); // the relay's own thread runs too: passes never overlap
            Await.until("both refused messages parked", () -> store.parked().size() == 2);
            Await.until("the five delivered", () -> {
                try {
                    return b.count(queue) >= 5;
                } catch (Exception e) {
                    throw new IllegalStateException(e);
                }
            });
            Thread.sleep(300); // a duplicate would show up by now; nothing is timed
            List<GetResponse> got = b.drain(queue);
            assertThat(got).hasSize(5);
            for (int i = 0; i < 5; i++) {
                GetResponse r = got.get(i);
                assertThat(r.getProps().getMessageId()).isEqualTo("order-" + i + "-placed");
                assertThat(new String(r.getBody(), StandardCharsets.UTF_8)).isEqualTo("{\"n\":" + i + "}");
                assertThat(Broker.header(r, Outbox.KEY_HEADER)).isEqualTo("order-" + i);
                assertThat(Broker.header(r, "tenant")).isEqualTo("acme");
                assertThat(r.getProps().getDeliveryMode()).isEqualTo(2);
            }
            assertThat(store.parked()).anySatisfy(p -> {
                assertThat(p.record().messageId()).isEqualTo("unroutable-1");
                // RabbitMQ returns it as unroutable; the embedded broker refuses it outright
                assertThat(p.reason()).containsAnyOf("unroutable", "refused");
            }).anySatisfy(p -> {
                assertThat(p.record().messageId()).isEqualTo("missing-1");
                assertThat(p.reason()).contains("does not exist");
            });
            assertThat(store.depth()).isZero();
        }
    }
}
