package dev.idempotency.examples.payments;

import com.rabbitmq.client.AMQP;
import com.rabbitmq.client.Channel;
import com.rabbitmq.client.Connection;
import com.rabbitmq.client.ConnectionFactory;
import dev.idempotency.examples.ledger.Ledger;
import dev.idempotency.testsupport.Await;
import dev.idempotency.testsupport.TestRabbit;
import io.micronaut.context.ApplicationContext;
import io.micronaut.json.JsonMapper;
import io.micronaut.runtime.server.EmbeddedServer;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.DisplayName;
import org.junit.jupiter.api.Test;

import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.UUID;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * The example's asynchronous half (CONTRACT M2-M4): a capture publishes payment.captured through
 * the outbox; the ledger consumer books it, once per captured payment, however often the capture
 * is retried and however often the broker delivers the message.
 */
class LedgerTest {

    private final String exchange = "payments-test-" + UUID.randomUUID();
    private final String queue = "ledger-test-" + UUID.randomUUID();
    private EmbeddedServer server;

    @AfterEach
    void stop() throws Exception {
        if (server != null) {
            server.close();
        }
        try (Connection c = connect(); Channel ch = c.createChannel()) {
            for (String q : List.of(queue, queue + ".retry", queue + ".dead")) {
                ch.queueDelete(q);
            }
            ch.exchangeDelete(queue + ".dlx");
            ch.exchangeDelete(exchange);
        }
    }

    private static Connection connect() throws Exception {
        ConnectionFactory f = new ConnectionFactory();
        f.setUri(TestRabbit.uri());
        return f.newConnection("ledger-test");
    }


    @Test
    @DisplayName("M2/M4: each captured payment is booked once: captures retried, messages delivered again")
    void bookedOnce() throws Exception {
        server = ApplicationContext.run(EmbeddedServer.class, Map.of(
            "micronaut.server.port", -1,
            "idempotency.rabbitmq.enabled", "true",
            "idempotency.rabbitmq.uri", TestRabbit.uri(),
            "payments.messaging.exchange", exchange,
            "idempotency.rabbitmq.consumers.ledger.queue", queue,
            "idempotency.outbox.poll-interval", "50ms"), "test");
        Api api = new Api(server.getURI(), server.getApplicationContext().getBean(JsonMapper.class));
        Ledger ledger = server.getApplicationContext().getBean(Ledger.class);

        List<String> payments = new ArrayList<>();
        for (int i = 0; i < 5; i++) {
            var created = api.post("/payments", Api.newKey(), "{\"amount\":" + (1000 + i) + ",\"currency\":\"EUR\"}");
            String id = api.read(created, Payment.class).id();
            String key = Api.newKey();
            assertThat(api.post("/payments/" + id + "/capture", key, "{}").statusCode()).isEqualTo(200);
            assertThat(Api.replayed(api.post("/payments/" + id + "/capture", key, "{}"))).isTrue(); // the retry
            payments.add(id);
        }
        Await.until("five bookings", () -> ledger.view().entries().size() == 5);
        List<Ledger.Entry> booked = ledger.view().entries();
        assertThat(booked).extracting(Ledger.Entry::payment).containsExactlyElementsOf(payments);
        assertThat(booked).extracting(Ledger.Entry::amount).containsExactly(1000L, 1001L, 1002L, 1003L, 1004L);

        // the broker delivers every message again
        try (Connection c = connect(); Channel ch = c.createChannel()) {
            ch.confirmSelect();
            for (Ledger.Entry e : booked) {
                ch.basicPublish("", queue, new AMQP.BasicProperties.Builder().messageId(e.messageId())
                    .contentType("application/json").build(), ("{\"payment\":\"" + e.payment() + "\",\"amount\":"
                    + e.amount() + ",\"currency\":\"EUR\"}").getBytes(StandardCharsets.UTF_8));
            }
            ch.waitForConfirmsOrDie(10_000);
            Await.until("the duplicates consumed", () -> {
                try {
                    return ch.messageCount(queue) == 0 && ch.messageCount(queue + ".retry") == 0;
                } catch (Exception ex) {
                    return false;
                }
            });
        }
        Thread.sleep(300); // a second booking would show up by now; nothing is timed
        assertThat(ledger.view().entries()).hasSize(5);
        assertThat(ledger.view().handlerRuns()).isEqualTo(5);
    }
}
