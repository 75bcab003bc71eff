package dev.idempotency.rabbitmq;

import dev.idempotency.messaging.MessageHandler;
import dev.idempotency.messaging.OutboxStore;
import dev.idempotency.messaging.OutgoingMessage;
import dev.idempotency.messaging.Outbox;
import dev.idempotency.messaging.ReceivedMessage;
import dev.idempotency.server.Idempotent;
import dev.idempotency.store.postgres.PostgresOutboxStore;
import dev.idempotency.testsupport.Await;
import dev.idempotency.testsupport.EmbeddedAmqpBroker;
import dev.idempotency.testsupport.Http;
import dev.idempotency.testsupport.TestPostgres;
import io.micronaut.context.ApplicationContext;
import io.micronaut.context.annotation.Requires;
import io.micronaut.context.annotation.Value;
import io.micronaut.http.HttpResponse;
import io.micronaut.http.annotation.Body;
import io.micronaut.http.annotation.Controller;
import io.micronaut.http.annotation.Post;
import io.micronaut.runtime.server.EmbeddedServer;
import io.micronaut.scheduling.TaskExecutors;
import io.micronaut.scheduling.annotation.ExecuteOn;
import jakarta.inject.Named;
import jakarta.inject.Singleton;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.DisplayName;
import org.junit.jupiter.api.Test;

import javax.sql.DataSource;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicInteger;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * The transactional outbox end to end (CONTRACT M2, M3): a payments route in transactional mode on
 * PostgreSQL writes a capture row and publishes {@code payment.captured} in the same
 * transaction; the relay carries it to a broker of this test's own (so it can be stopped), and a
 * ledger consumer books it. The broker goes away while the API takes requests: every request is
 * answered without a 5xx, nothing is lost, and once the broker is back every capture is booked
 * exactly once. Replays publish nothing new.
 */
class OutboxOnRabbitTest {

    static final String SPEC = "OutboxOnRabbitTest";
    static final Map<String, AtomicInteger> BOOKED = new ConcurrentHashMap<>();
    /** Message ids the ledger saw. */
    static final Map<String, AtomicInteger> IDS = new ConcurrentHashMap<>();
    /** Makes the next capture fail after it published: its transaction rolls back. */
    static final java.util.concurrent.atomic.AtomicBoolean FAIL_NEXT = new java.util.concurrent.atomic.AtomicBoolean();

    @Controller("/captures")
    @ExecuteOn(TaskExecutors.BLOCKING)
    @Requires(property = "spec.name", value = SPEC)
    static class Captures {
        private final DataSource dataSource;
        private final Outbox outbox;
        private final String schema;

        Captures(DataSource dataSource, Outbox outbox, @Value("${test.schema}") String schema) {
            this.dataSource = dataSource;
            this.outbox = outbox;
            this.schema = schema;
        }

        @Post
        @Idempotent(transactional = true)
        HttpResponse<Map<String, String>> capture(@Body Map<String, String> body) throws SQLException {
            String id = "cap_" + UUID.randomUUID().toString().substring(0, 8);
            Connection c = dataSource.getConnection(); // the request's transaction's connection
            try (PreparedStatement ps = c.prepareStatement("INSERT INTO " + schema + ".captures (id, payment) VALUES (?, ?)")) {
                ps.setString(1, id);
                ps.setString(2, body.get("payment"));
                ps.executeUpdate();
            }
            outbox.publish("payment.captured", OutgoingMessage.json("payments", "payment.captured",
                "{\"capture\":\"" + id + "\"}").orderedBy(body.get("payment")));
            if (FAIL_NEXT.getAndSet(false)) {
                throw new IllegalStateException("the card network timed out"); // 500: everything rolls back
            }
            return HttpResponse.created(Map.of("id", id));
        }
    }

    @Singleton
    @Named("ledger")
    @Requires(property = "spec.name", value = SPEC)
    static class Ledger implements MessageHandler {
        @Override
        public CompletableFuture<Void> handle(ReceivedMessage message) {
            BOOKED.computeIfAbsent(message.bodyText(), k -> new AtomicInteger()).incrementAndGet();
            IDS.computeIfAbsent(message.messageId(), k -> new AtomicInteger()).incrementAndGet();
            return CompletableFuture.completedFuture(null);
        }
    }

    private final String schema = TestPostgres.newSchema();
    private final String queue = "ledger-" + UUID.randomUUID();
    private EmbeddedAmqpBroker broker = EmbeddedAmqpBroker.start();
    private EmbeddedServer server;
    private final com.zaxxer.hikari.HikariDataSource pool = TestPostgres.pool(TestPostgres.server(), 2);

    @AfterEach
    void stop() {
        if (server != null) {
            server.close();
        }
        broker.close();
        pool.close();
        TestPostgres.dropSchema(schema);
    }


    private long count(String sql) throws SQLException {
        try (Connection c = pool.getConnection(); Statement s = c.createStatement(); ResultSet rs = s.executeQuery(sql)) {
            rs.next();
            return rs.getLong(1);
        }
    }

    private List<String> captureIds() throws SQLException {
        List<String> ids = new ArrayList<>();
        try (Connection c = pool.getConnection(); Statement s = c.createStatement();
             ResultSet rs = s.executeQuery("SELECT id FROM " + schema + ".captures")) {
            while (rs.next()) {
                ids.add("{\"capture\":\"" + rs.getString(1) + "\"}");
            }
        }
        return ids;
    }

    @Test
    @DisplayName("M3: the broker goes away under load: no 5xx, nothing lost; when it is back every capture is booked"
        + " exactly once; replays publish nothing")
    void brokerOutage() throws Exception {
        TestPostgres.execute("CREATE SCHEMA " + schema);
        TestPostgres.execute("CREATE TABLE " + schema + ".captures (id text PRIMARY KEY, payment text NOT NULL)");
        Map<String, Object> p = new HashMap<>(TestPostgres.properties(TestPostgres.server(), schema));
        p.put("spec.name", SPEC);
        p.put("test.schema", schema);
        p.put("idempotency.store.redis.enabled", "false");
        p.put("idempotency.rabbitmq.uri", broker.uri());
        p.put("idempotency.rabbitmq.recovery-interval", "200ms");
        p.put("idempotency.rabbitmq.exchanges.payments.type", "topic");
        p.put("idempotency.rabbitmq.consumers.ledger.queue", queue);
        p.put("idempotency.rabbitmq.consumers.ledger.exchange", "payments");
        p.put("idempotency.rabbitmq.consumers.ledger.routing-keys", "payment.captured");
        p.put("idempotency.outbox.poll-interval", "100ms");
        p.put("idempotency.outbox.retry-backoff", "100ms");
        p.put("idempotency.outbox.retry-backoff-max", "500ms");
        p.put("idempotency.outbox.send-timeout", "2s");
        server = ApplicationContext.run(EmbeddedServer.class, p);
        assertThat(server.getApplicationContext().getBean(OutboxStore.class)).isInstanceOf(PostgresOutboxStore.class);
        Http http = new Http(server.getURI());

        List<String> keys = new ArrayList<>();
        for (int i = 0; i < 20; i++) {
            String key = "\"cap-" + UUID.randomUUID() + "\"";
            keys.add(key);
            var r = http.postJson("/captures", key, "{\"payment\":\"pay_" + (i % 4) + "\"}");
            assertThat(r.statusCode()).as(Http.body(r)).isEqualTo(201);
        }
        // a capture that fails after publishing: its row and its message roll back; its retry publishes once,
        // under the id the failed attempt had
        FAIL_NEXT.set(true);
        String failing = "\"cap-" + UUID.randomUUID() + "\"";
        assertThat(http.postJson("/captures", failing, "{\"payment\":\"pay_9\"}").statusCode()).isEqualTo(500);
        assertThat(count("SELECT count(*) FROM " + schema + ".idempotency_records_outbox")).isZero();
        assertThat(http.postJson("/captures", failing, "{\"payment\":\"pay_9\"}").statusCode()).isEqualTo(201);
        keys.add(failing);
        for (int i = 0; i < 5; i++) { // retries of earlier captures: replays, nothing new published
            var r = http.postJson("/captures", keys.get(i), "{\"payment\":\"pay_" + (i % 4) + "\"}");
            assertThat(r.headers().firstValue("Idempotent-Replayed")).hasValue("true");
        }
        Await.until("the first 21 booked", () -> BOOKED.size() >= 21);

        int port = broker.port();
        broker.close(); // the broker goes away
        for (int i = 20; i < 40; i++) {
            var r = http.postJson("/captures", "\"cap-" + UUID.randomUUID() + "\"", "{\"payment\":\"pay_" + (i % 4) + "\"}");
            assertThat(r.statusCode()).as("no 5xx while the broker is away: " + Http.body(r)).isEqualTo(201);
        }
        assertThat(count("SELECT count(*) FROM " + schema + ".idempotency_records_outbox")).isEqualTo(20);

        broker = EmbeddedAmqpBroker.start(port); // and comes back
        Await.until("all 41 captures booked", () -> {
            try {
                return BOOKED.keySet().containsAll(captureIds())
                    && count("SELECT count(*) FROM " + schema + ".idempotency_records_outbox") == 0;
            } catch (SQLException e) {
                return false;
            }
        });
        Thread.sleep(500); // a second booking would show up by now; nothing is timed
        List<String> captures = captureIds();
        assertThat(captures).hasSize(41);
        assertThat(captures).allSatisfy(c -> assertThat(BOOKED.get(c)).hasValue(1));
        assertThat(IDS).hasSize(41).allSatisfy((id, n) -> assertThat(n).hasValue(1));
    }
}
