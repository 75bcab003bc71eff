package dev.idempotency.store.postgres;

import dev.idempotency.server.Idempotent;
// tag::imports[]
import dev.idempotency.server.IdempotentOperation;
// end::imports[]
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
import io.micronaut.transaction.annotation.Transactional;
import jakarta.inject.Singleton;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.DisplayName;
import org.junit.jupiter.api.Test;

import javax.sql.DataSource;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.SQLException;
import java.util.Map;
import java.util.UUID;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicInteger;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * CONTRACT S23 on PostgreSQL through the filter: steps resume after a released 5xx and after a
 * rolled-back attempt in transactional mode, and a transactional step (an atomic phase) commits or
 * rolls back its business rows with its record.
 */
class DurableStepsPostgresTest {

    private static final String SCHEMA = TestPostgres.newSchema();
    private static EmbeddedServer server;
    private static Http http;

    /** Reserves stock with plain JDBC on the application's (transaction-aware) DataSource. */
    @Singleton
    @Requires(property = "spec.name", value = "DurableStepsPostgresTest")
    static class Stock {
        final DataSource dataSource;
        final String schema;

        Stock(DataSource dataSource, @Value("${test.schema}") String schema) {
            this.dataSource = dataSource;
            this.schema = schema;
        }

        /** Joins the transaction in scope: the step's, when the step is transactional. */
        @Transactional
        String reserve(String order, boolean failAfterWrite) throws SQLException {
            Connection c = dataSource.getConnection();
            try (PreparedStatement ps = c.prepareStatement("INSERT INTO " + schema + ".reservations (id, order_id)"
                + " VALUES (?, ?)")) {
                String id = "r-" + UUID.randomUUID();
                ps.setString(1, id);
                ps.setString(2, order);
                ps.executeUpdate();
                if (failAfterWrite) {
                    throw new IllegalStateException("the step failed after its write");
                }
                return id;
            }
        }
    }

    @Controller("/steps")
    @ExecuteOn(TaskExecutors.BLOCKING)
    @Requires(property = "spec.name", value = "DurableStepsPostgresTest")
    static class Api {
        final Map<String, AtomicInteger> charges = new ConcurrentHashMap<>();
        final Map<String, AtomicInteger> executions = new ConcurrentHashMap<>();
        private final Stock stock;

        Api(Stock stock) {
            this.stock = stock;
        }

        @Post("/orders")
        @Idempotent
        HttpResponse<Map<String, Object>> order(@Body Map<String, Object> body) {
            String order = (String) body.get("order");
            boolean failStep = Boolean.TRUE.equals(body.get("failStep"));
            IdempotentOperation op = IdempotentOperation.required();
            String reservation;
            try {
                // tag::atomic-phase[]
                // the reservation's row and the step's record commit together, or neither does
                reservation = op.step("reserve", String.class).transactional().run(() -> {
                    try {
                        return stock.reserve(order, failStep && executions.computeIfAbsent(order + ":step",
                            k -> new AtomicInteger()).incrementAndGet() == 1);
                    } catch (SQLException e) {
                        throw new IllegalStateException(e);
                    }
                });
                // end::atomic-phase[]
            } catch (IllegalStateException e) {
                return HttpResponse.serverError(Map.of("error", e.getMessage()));
            }
            String charge = op.step("charge", String.class,
                () -> "ch-" + charges.computeIfAbsent(order, k -> new AtomicInteger()).incrementAndGet());
            int n = executions.computeIfAbsent(order, k -> new AtomicInteger()).incrementAndGet();
            Map<String, Object> result = Map.of("reservation", reservation, "charge", charge);
            return n == 1 && Boolean.TRUE.equals(body.get("failOnce")) ? HttpResponse.serverError(result)
                : HttpResponse.created(result);
        }

        /** An asynchronous transactional step: its work runs on the island, in the request's context. */
        @Post("/orders-async")
        @Idempotent
        java.util.concurrent.CompletionStage<HttpResponse<Map<String, Object>>> orderAsync(@Body Map<String, Object> body) {
            String order = (String) body.get("order");
            IdempotentOperation op = IdempotentOperation.required();
            return op.step("reserve", String.class).transactional().runAsync(() -> {
                try {
                    String id = stock.reserve(order, false);
                    boolean inOperation = IdempotentOperation.current().filter(o -> o.equals(op)).isPresent();
                    return java.util.concurrent.CompletableFuture.completedFuture(id + (inOperation ? ":in-operation" : ":none"));
                } catch (SQLException e) {
                    throw new IllegalStateException(e);
                }
            }).thenApply(reservation -> HttpResponse.created(Map.<String, Object>of("reservation", reservation)));
        }

        /**
         * Transactional mode (S18): a plain step (recorded beside the attempt's transaction, so it
         * survives the rollback) and a transactional one (inside it, rolled back with it); the
         * first attempt fails after both.
         */
        @Post("/tx-mode")
        @Idempotent(transactional = true)
        HttpResponse<Map<String, Object>> txMode(@Body Map<String, Object> body) {
            String order = (String) body.get("order");
            IdempotentOperation op = IdempotentOperation.required();
            String charge = op.step("charge", String.class,
                () -> "ch-" + charges.computeIfAbsent(order, k -> new AtomicInteger()).incrementAndGet());
            String reservation = op.step("reserve", String.class).transactional().run(() -> {
                try {
                    return stock.reserve(order, false);
                } catch (SQLException e) {
                    throw new IllegalStateException(e);
                }
            });
            if (executions.computeIfAbsent(order, k -> new AtomicInteger()).incrementAndGet() == 1) {
                throw new IllegalStateException("the first attempt fails after both steps");
            }
            return HttpResponse.created(Map.of("reservation", reservation, "charge", charge));
        }
    }

    @BeforeAll
    static void start() {
        TestPostgres.Server pg = TestPostgres.server();
        TestPostgres.execute("CREATE SCHEMA " + SCHEMA);
        TestPostgres.execute("CREATE TABLE " + SCHEMA + ".reservations (id text PRIMARY KEY, order_id text NOT NULL)");
        Map<String, Object> props = TestPostgres.properties(pg, SCHEMA);
        props.put("spec.name", "DurableStepsPostgresTest");
        props.put("test.schema", SCHEMA);
        server = ApplicationContext.run(EmbeddedServer.class, props);
        http = new Http(server.getURI());
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

    private static long reservations(String order) throws SQLException {
        return count("SELECT count(*) FROM " + SCHEMA + ".reservations WHERE order_id = ?", order);
    }

    private static long steps() throws SQLException {
        return count("SELECT count(*) FROM " + SCHEMA + ".idempotency_records_steps", null);
    }

    private static String key() {
        return "\"" + UUID.randomUUID() + "\"";
    }

    @Test
    @DisplayName("S23: after a released 5xx the retry resumes from the PostgreSQL steps: one reservation, one charge")
    void releasedFiveHundredResumes() throws Exception {
        String order = "o-" + UUID.randomUUID();
        String k = key();
        String payload = "{\"order\":\"" + order + "\",\"failOnce\":true}";
        var failed = http.postJson("/steps/orders", k, payload);
        assertThat(failed.statusCode()).isEqualTo(500);
        var retried = http.postJson("/steps/orders", k, payload);
        assertThat(retried.statusCode()).isEqualTo(201);
        assertThat(new String(retried.body())).isEqualTo(new String(failed.body()));
        assertThat(reservations(order)).isEqualTo(1);
    }

    @Test
    @DisplayName("S23: a transactional step that fails after its write leaves neither the row nor the step; the retry runs it once")
    void atomicPhaseRollsBackWithItsRecord() throws Exception {
        String order = "o-" + UUID.randomUUID();
        String k = key();
        long stepsBefore = steps();
        String payload = "{\"order\":\"" + order + "\",\"failStep\":true}";
        var failed = http.postJson("/steps/orders", k, payload);
        assertThat(failed.statusCode()).isEqualTo(500);
        assertThat(new String(failed.body())).contains("the step failed after its write");
        assertThat(reservations(order)).isZero();
        assertThat(steps()).isEqualTo(stepsBefore);

        var retried = http.postJson("/steps/orders", k, payload);
        assertThat(retried.statusCode()).isEqualTo(201);
        assertThat(reservations(order)).isEqualTo(1);
        assertThat(steps()).isEqualTo(stepsBefore + 2); // reserve and charge
    }

    @Test
    @DisplayName("S23: an asynchronous transactional step runs its work in the request's context and commits its row once")
    void asyncAtomicPhase() throws Exception {
        String order = "o-" + UUID.randomUUID();
        String k = key();
        var created = http.postJson("/steps/orders-async", k, "{\"order\":\"" + order + "\"}");
        assertThat(created.statusCode()).isEqualTo(201);
        assertThat(new String(created.body())).contains(":in-operation");
        assertThat(reservations(order)).isEqualTo(1);
    }

    @Test
    @DisplayName("S23/S18: in transactional mode a rolled-back attempt keeps its plain steps, not its transactional ones;"
        + " the retry resumes the first and runs the second once")
    void transactionalRetryResumes() throws Exception {
        String order = "o-" + UUID.randomUUID();
        String k = key();
        String payload = "{\"order\":\"" + order + "\"}";
        var failed = http.postJson("/steps/tx-mode", k, payload);
        assertThat(failed.statusCode()).isEqualTo(500);
        assertThat(reservations(order)).as("the transactional step rolled back with the attempt").isZero();
        assertThat(count("SELECT count(*) FROM " + SCHEMA + ".idempotency_records_steps WHERE step = ?", "charge"))
            .isGreaterThanOrEqualTo(1);

        var retried = http.postJson("/steps/tx-mode", k, payload);
        assertThat(retried.statusCode()).isEqualTo(201);
        assertThat(new String(retried.body())).contains("\"charge\":\"ch-1\"");
        assertThat(reservations(order)).isEqualTo(1);
        var replay = http.postJson("/steps/tx-mode", k, payload);
        assertThat(replay.body()).isEqualTo(retried.body());
    }
}
