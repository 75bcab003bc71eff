package dev.idempotency.store.postgres;

import dev.idempotency.testsupport.Http;

import dev.idempotency.testsupport.TestPostgres;

import dev.idempotency.server.Idempotent;
import dev.idempotency.server.store.IdempotencyStore;
import io.micronaut.context.ApplicationContext;
import io.micronaut.context.annotation.Requires;
import io.micronaut.context.annotation.Value;
import io.micronaut.http.HttpResponse;
import io.micronaut.http.annotation.Body;
import io.micronaut.http.annotation.Controller;
import io.micronaut.http.annotation.Post;
import io.micronaut.scheduling.TaskExecutors;
import io.micronaut.scheduling.annotation.ExecuteOn;
import io.micronaut.runtime.server.EmbeddedServer;
import io.micronaut.transaction.annotation.Transactional;
import jakarta.inject.Singleton;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.DisplayName;
import org.junit.jupiter.api.Test;

import javax.sql.DataSource;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * Transactional mode (S18) against real PostgreSQL: the handler writes a business row through a
 * {@code @Transactional} service using the application's {@code DataSource}; that write and the
 * idempotency record commit or roll back together.
 */
class TransactionalModeTest {

    private static final String SCHEMA = TestPostgres.newSchema();
    private static EmbeddedServer server;
    private static Http http;
    private static Orders orders;

    /** Writes business rows with plain JDBC on the application's (transaction-aware) DataSource. */
    @Singleton
    @Requires(property = "spec.name", value = "TransactionalModeTest")
    static class Orders {
        final DataSource dataSource;
        final String schema;
        final AtomicInteger executions = new AtomicInteger();
        volatile CountDownLatch entered = new CountDownLatch(0);
        volatile CountDownLatch gate = new CountDownLatch(0);
        volatile boolean breakCommit;

        Orders(DataSource dataSource, @Value("${test.schema}") String schema) {
            this.dataSource = dataSource;
            this.schema = schema;
        }

        @Transactional
        int create(String id, boolean fail) throws SQLException, InterruptedException {
            int n = executions.incrementAndGet();
            Connection c = dataSource.getConnection(); // the transaction's connection: not closed here
            try (PreparedStatement ps = c.prepareStatement("INSERT INTO " + schema + ".orders (id, code) VALUES (?, ?)")) {
                ps.setString(1, id);
                ps.setString(2, breakCommit ? "same" : id);
                ps.executeUpdate();
                if (breakCommit) {
                    // a deferred unique constraint: the violation surfaces only at COMMIT
                    ps.setString(1, id + "-twin");
                    ps.executeUpdate();
                }
            }
            entered.countDown();
            if (!gate.await(30, TimeUnit.SECONDS)) {
                throw new IllegalStateException("gate never opened");
            }
            if (fail) {
                throw new IllegalStateException("handler failed after its write");
            }
            return n;
        }
    }

    @Controller("/tx")
    @ExecuteOn(TaskExecutors.BLOCKING)
    @Requires(property = "spec.name", value = "TransactionalModeTest")
    static class Api {
        private final Orders orders;

        Api(Orders orders) {
            this.orders = orders;
        }

        @Post("/orders")
        @Idempotent(transactional = true)
        HttpResponse<Map<String, Object>> create(@Body Map<String, Object> body) throws Exception {
            String id = (String) body.get("id");
            int n = orders.create(id, Boolean.TRUE.equals(body.get("fail")));
            return HttpResponse.created(Map.of("id", id, "execution", n));
        }
    }

    @BeforeAll
    static void start() {
        TestPostgres.Server pg = TestPostgres.server();
        TestPostgres.execute("CREATE SCHEMA " + SCHEMA);
        TestPostgres.execute("CREATE TABLE " + SCHEMA + ".orders (id text PRIMARY KEY, code text NOT NULL,"
            + " CONSTRAINT orders_code_key UNIQUE (code) DEFERRABLE INITIALLY DEFERRED)");
        Map<String, Object> props = TestPostgres.properties(pg, SCHEMA);
        props.put("spec.name", "TransactionalModeTest");
        props.put("test.schema", SCHEMA);
        props.put("idempotency.store.postgres.lock-timeout", "300ms");
        server = ApplicationContext.run(EmbeddedServer.class, props);
        http = new Http(server.getURI());
        orders = server.getApplicationContext().getBean(Orders.class);
    }

    @AfterAll
    static void stop() {
        if (server != null) {
            server.close();
        }
        TestPostgres.dropSchema(SCHEMA);
    }

    private static long count(String sql, String param) {
        return TestPostgres.count(sql, param);
    }

    private static long orders(String id) throws SQLException {
        return count("SELECT count(*) FROM " + SCHEMA + ".orders WHERE id LIKE ? || '%'", id);
    }

    private static long records() throws SQLException {
        return count("SELECT count(*) FROM " + SCHEMA + ".idempotency_records", null);
    }

    private static String key() {
        return "\"" + UUID.randomUUID() + "\"";
    }

    @Test
    @DisplayName("S18: the store in use is the transactional PostgreSQL store")
    void storeIsPostgres() {
        assertThat(server.getApplicationContext().getBean(IdempotencyStore.class))
            .isInstanceOf(PostgresIdempotencyStore.class);
    }

    @Test
    @DisplayName("S18/S14: a handler that throws after its write leaves neither the business row nor the record;"
        + " the retry runs once and commits both; a replay writes nothing")
    void failureRollsBackBothThenRetryCommitsBoth() throws Exception {
        String id = "o-" + UUID.randomUUID();
        String k = key();
        long recordsBefore = records();
        int runs = orders.executions.get();

        java.net.http.HttpResponse<byte[]> failed = http.postJson("/tx/orders", k, "{\"id\":\"" + id + "\",\"fail\":true}");
        assertThat(failed.statusCode()).isEqualTo(500);
        assertThat(orders.executions.get()).isEqualTo(runs + 1);
        assertThat(orders(id)).isZero();
        assertThat(records()).isEqualTo(recordsBefore);

        // the retry (same key; this time the handler succeeds) runs exactly once and both rows exist
        String payload = "{\"id\":\"" + id + "\",\"fail\":false}";
        java.net.http.HttpResponse<byte[]> ok = http.postJson("/tx/orders", k, payload);
        assertThat(ok.statusCode()).isEqualTo(201);
        assertThat(orders.executions.get()).isEqualTo(runs + 2);
        assertThat(orders(id)).isEqualTo(1);
        assertThat(records()).isEqualTo(recordsBefore + 1);
        assertThat(count("SELECT count(*) FROM " + SCHEMA + ".idempotency_records WHERE completed", null))
            .isGreaterThanOrEqualTo(1);

        java.net.http.HttpResponse<byte[]> replay = http.postJson("/tx/orders", k, payload);
        assertThat(replay.statusCode()).isEqualTo(201);
        assertThat(replay.headers().firstValue("Idempotent-Replayed")).hasValue("true");
        assertThat(replay.body()).isEqualTo(ok.body());
        assertThat(orders.executions.get()).isEqualTo(runs + 2);
        assertThat(orders(id)).isEqualTo(1);
    }

    @Test
    @DisplayName("S18/S10/S11: concurrent duplicates in transactional mode: one execution; the others wait"
        + " lock-timeout on the uncommitted record and get 409 with Retry-After, or the replay after the commit")
    void concurrentDuplicatesRunOnce() throws Exception {
        String id = "c-" + UUID.randomUUID();
        String k = key();
        String payload = "{\"id\":\"" + id + "\"}";
        int runs = orders.executions.get();
        CountDownLatch gate = new CountDownLatch(1);
        orders.entered = new CountDownLatch(1);
        orders.gate = gate;
        ExecutorService pool = Executors.newFixedThreadPool(8);
        try {
            Future<java.net.http.HttpResponse<byte[]>> original = pool.submit(() -> http.postJson("/tx/orders", k, payload));
            assertThat(orders.entered.await(10, TimeUnit.SECONDS)).isTrue();
            List<Future<java.net.http.HttpResponse<byte[]>>> duplicates = new ArrayList<>();
            for (int i = 0; i < 6; i++) {
                duplicates.add(pool.submit(() -> http.postJson("/tx/orders", k, payload)));
            }
            for (Future<java.net.http.HttpResponse<byte[]>> f : duplicates) {
                java.net.http.HttpResponse<byte[]> r = f.get(20, TimeUnit.SECONDS);
                assertThat(r.statusCode()).isEqualTo(409);
                assertThat(r.headers().firstValue("Retry-After")).isPresent();
                assertThat(Http.body(r)).contains("\"code\":\"idempotency-request-in-progress\"");
            }
            // a duplicate still waiting on the row lock when the original commits gets the replay
            Future<java.net.http.HttpResponse<byte[]>> late = pool.submit(() -> http.postJson("/tx/orders", k, payload));
            Thread.sleep(100);
            orders.gate = new CountDownLatch(0);
            gate.countDown();
            java.net.http.HttpResponse<byte[]> first = original.get(20, TimeUnit.SECONDS);
            assertThat(first.statusCode()).isEqualTo(201);
            java.net.http.HttpResponse<byte[]> lateAnswer = late.get(20, TimeUnit.SECONDS);
            assertThat(lateAnswer.statusCode()).isIn(201, 409);
            if (lateAnswer.statusCode() == 201) {
                assertThat(lateAnswer.body()).isEqualTo(first.body());
            }
            java.net.http.HttpResponse<byte[]> replay = http.postJson("/tx/orders", k, payload);
            assertThat(replay.headers().firstValue("Idempotent-Replayed")).hasValue("true");
            assertThat(orders.executions.get()).isEqualTo(runs + 1);
            assertThat(orders(id)).isEqualTo(1);
        } finally {
            orders.gate = new CountDownLatch(0);
            pool.shutdownNow();
        }
    }

    @Test
    @DisplayName("S18/S19: a failed commit is answered 503 problem with Retry-After (not the handler's 201);"
        + " neither row exists and the retry runs")
    void commitFailureIs503() throws Exception {
        String id = "f-" + UUID.randomUUID();
        String k = key();
        String payload = "{\"id\":\"" + id + "\"}";
        long recordsBefore = records();
        orders.breakCommit = true;
        java.net.http.HttpResponse<byte[]> r;
        try {
            r = http.postJson("/tx/orders", k, payload);
        } finally {
            orders.breakCommit = false;
        }
        assertThat(r.statusCode()).isEqualTo(503);
        assertThat(r.headers().firstValue("Retry-After")).isPresent();
        assertThat(Http.body(r)).contains("\"code\":\"idempotency-store-unavailable\"");
        assertThat(orders(id)).isZero();
        assertThat(records()).isEqualTo(recordsBefore);

        int runs = orders.executions.get();
        assertThat(http.postJson("/tx/orders", k, payload).statusCode()).isEqualTo(201);
        assertThat(orders.executions.get()).isEqualTo(runs + 1);
        assertThat(orders(id)).isEqualTo(1);
    }

    @Test
    @DisplayName("S17: the store applied its own migration, with a history table apart from the application's")
    void migrationHistory() throws Exception {
        try (Connection c = TestPostgres.server().connect(); Statement s = c.createStatement();
             ResultSet rs = s.executeQuery("SELECT count(*) FROM " + SCHEMA + ".idempotency_records_schema_history")) {
            rs.next();
            assertThat(rs.getLong(1)).isPositive();
        }
    }
}
