package dev.idempotency.rabbitmq;

import dev.idempotency.messaging.ReceivedMessage;
import dev.idempotency.messaging.TransactionalMessageHandler;
import dev.idempotency.testsupport.Await;
import dev.idempotency.testsupport.TestPostgres;
import dev.idempotency.testsupport.TestRabbit;
import io.micronaut.context.ApplicationContext;
import io.micronaut.context.annotation.Requires;
import io.micronaut.context.annotation.Value;
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
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * The transactional consumer, the inbox (CONTRACT M5), on PostgreSQL and the real broker: the
 * message id is recorded in the same transaction as the ledger row the handler writes, so a
 * consumer that dies mid-handler leaves neither, and the redelivery books it once; a duplicate
 * writes nothing; a handler failure rolls its writes back before the retry.
 */
class InboxOnRabbitTest {

    static final String SPEC = "InboxOnRabbitTest";
    static volatile CountDownLatch gate = new CountDownLatch(0);
    static volatile CountDownLatch entered = new CountDownLatch(0);

    @Singleton
    @Named("ledger")
    @Requires(property = "spec.name", value = SPEC)
    static class Ledger implements TransactionalMessageHandler {
        private final DataSource dataSource;
        private final String schema;

        Ledger(DataSource dataSource, @Value("${test.schema}") String schema) {
            this.dataSource = dataSource;
            this.schema = schema;
        }

        @Override
        public void handle(ReceivedMessage message) {
            String body = message.bodyText();
            try {
                Connection c = dataSource.getConnection(); // the consumer's transaction's connection
                try (PreparedStatement ps = c.prepareStatement("INSERT INTO " + schema + ".ledger (entry) VALUES (?)")) {
                    ps.setString(1, body);
                    ps.executeUpdate();
                }
            } catch (SQLException e) {
                throw new IllegalStateException(e);
            }
            if (body.startsWith("slow")) {
                CountDownLatch wait = gate;
                entered.countDown();
                try {
                    wait.await();
                } catch (InterruptedException e) {
                    Thread.currentThread().interrupt();
                    throw new IllegalStateException("the consumer was killed");
                }
            }
            if (body.startsWith("flaky") && message.attempt() == 0) {
                throw new IllegalStateException("the first try fails after its write");
            }
        }
    }

    private final String schema = TestPostgres.newSchema();
    private final String queue = "inbox-" + UUID.randomUUID();
    private final List<ApplicationContext> contexts = new ArrayList<>();
    private final List<CountDownLatch> held = new ArrayList<>();
    private final com.zaxxer.hikari.HikariDataSource pool = TestPostgres.pool(TestPostgres.server(), 2);

    @AfterEach
    void stop() throws Exception {
        contexts.forEach(ApplicationContext::close);
        held.forEach(CountDownLatch::countDown);
        try (Broker b = new Broker(TestRabbit.uri())) {
            b.deleteTopology(queue);
        }
        pool.close();
        TestPostgres.dropSchema(schema);
    }

    private ApplicationContext consumer() {
        Map<String, Object> p = new HashMap<>(TestPostgres.properties(TestPostgres.server(), schema));
        p.put("spec.name", SPEC);
        p.put("test.schema", schema);
        p.put("idempotency.store.redis.enabled", "false");
        p.put("idempotency.store.postgres.lock-timeout", "200ms");
        p.put("idempotency.rabbitmq.uri", TestRabbit.uri());
        p.put("idempotency.rabbitmq.consumers.ledger.queue", queue);
        p.put("idempotency.rabbitmq.consumers.ledger.transactional", "true");
        p.put("idempotency.rabbitmq.consumers.ledger.retry-delay", "200ms");
        p.put("idempotency.rabbitmq.consumers.ledger.in-progress-delay", "200ms");
        p.put("idempotency.outbox.enabled", "false");
        ApplicationContext ctx = ApplicationContext.run(p);
        contexts.add(ctx);
        return ctx;
    }

    private long entries(String body) throws SQLException {
        try (Connection c = pool.getConnection();
             PreparedStatement ps = c.prepareStatement("SELECT count(*) FROM " + schema + ".ledger WHERE entry = ?")) {
            ps.setString(1, body);
            try (ResultSet rs = ps.executeQuery()) {
                rs.next();
                return rs.getLong(1);
            }
        }
    }


    private void createLedger() throws SQLException {
        try (Connection c = pool.getConnection(); Statement s = c.createStatement()) {
            s.execute("CREATE SCHEMA " + schema);
            s.execute("CREATE TABLE " + schema + ".ledger (id bigserial PRIMARY KEY, entry text NOT NULL)");
        }
    }

    @Test
    @DisplayName("M5: a duplicate writes nothing; a failure after the handler's write rolls it back, the retry books once")
    void duplicatesAndFailures() throws Exception {
        createLedger();
        consumer();
        String once = "once-" + UUID.randomUUID();
        String flaky = "flaky-" + UUID.randomUUID();
        try (Broker b = new Broker(TestRabbit.uri())) {
            b.send(queue, "id-" + once, once);
            b.send(queue, "id-" + once, once);
            b.send(queue, "id-" + flaky, flaky);
            Await.until("both booked", () -> {
                try {
                    return entries(once) >= 1 && entries(flaky) >= 1 && b.count(queue) == 0 && b.count(queue + ".retry") == 0;
                } catch (Exception e) {
                    return false;
                }
            });
            Thread.sleep(500); // a second entry would show up by now; nothing is timed
        }
        assertThat(entries(once)).isEqualTo(1);
        assertThat(entries(flaky)).isEqualTo(1);
    }

    @Test
    @DisplayName("M5: a consumer that dies inside its transaction leaves neither its write nor the message id; the"
        + " redelivery books it once")
    void diesInsideItsTransaction() throws Exception {
        createLedger();
        CountDownLatch never = new CountDownLatch(1);
        held.add(never);
        gate = never;
        entered = new CountDownLatch(1);
        ApplicationContext dying = consumer();
        String slow = "slow-" + UUID.randomUUID();
        try (Broker b = new Broker(TestRabbit.uri())) {
            b.send(queue, "id-" + slow, slow);
            assertThat(entered.await(30, TimeUnit.SECONDS)).isTrue();
            dying.close(); // the instance dies with its transaction open: the database rolls it back
            contexts.remove(dying);
            assertThat(entries(slow)).isZero(); // its write never committed
            gate = new CountDownLatch(0);
            consumer();
            Await.until("the redelivery booked", () -> {
                try {
                    return entries(slow) >= 1;
                } catch (SQLException e) {
                    return false;
                }
            });
            Thread.sleep(500);
        }
        assertThat(entries(slow)).isEqualTo(1);
    }
}
