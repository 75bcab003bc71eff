package dev.idempotency.examples.payments;

import dev.idempotency.server.store.IdempotencyStore;
import dev.idempotency.store.postgres.PostgresIdempotencyStore;
import dev.idempotency.testsupport.TestPostgres;
import io.micronaut.json.JsonMapper;
import io.micronaut.runtime.server.EmbeddedServer;
import io.micronaut.test.extensions.junit5.annotation.MicronautTest;
import io.micronaut.test.support.TestPropertyProvider;
import jakarta.inject.Inject;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.DisplayName;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestInstance;

import java.net.http.HttpResponse;
import java.sql.SQLException;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * The example in its {@code postgres} environment, as the README runs it: the PostgreSQL store
 * in transactional mode, and the payments, refunds and side-effect ledger in the same database
 * (the configured server, else an embedded one; a schema of this class's own, dropped after).
 */
@MicronautTest(environments = "postgres", transactional = false) // the requests make their own transactions
@TestInstance(TestInstance.Lifecycle.PER_CLASS)
class PostgresModeTest implements TestPropertyProvider {

    private static final String SCHEMA = TestPostgres.newSchema();

    @Inject
    EmbeddedServer server;
    @Inject
    IdempotencyStore store;
    @Inject
    PaymentRepository repository;
    @Inject
    TestFailureInjection failureInjection;
    @Inject
    JsonMapper json;

    @Override
    public Map<String, String> getProperties() {
        Map<String, String> p = new HashMap<>();
        TestPostgres.properties(TestPostgres.server(), SCHEMA).forEach((k, v) -> p.put(k, String.valueOf(v)));
        p.put("payments.postgres.schema", SCHEMA);
        p.put("idempotency.store.postgres.purge-enabled", "false");
        // TEST ONLY: lets the test fail a create after its business write (TestFailureInjection)
        p.put("payments.test.failure-injection", "true");
        return p;
    }

    @AfterAll
    void dropSchema() {
        TestPostgres.dropSchema(SCHEMA);
    }

    @Test
    @DisplayName("S17/S18: in the postgres environment the transactional PostgreSQL store and the JDBC business"
        + " storage serve the example; a create and its replay: one payment row, one side effect")
    void createAndReplay() throws SQLException {
        assertThat(store).isInstanceOf(PostgresIdempotencyStore.class);
        assertThat(repository).isInstanceOf(JdbcPaymentRepository.class);
        Api api = new Api(server.getURI(), json);
        String customer = "cus_" + UUID.randomUUID().toString().substring(0, 8);
        String key = Api.newKey();
        long sideEffects = api.stats().sideEffects();
        long records = count("SELECT count(*) FROM " + SCHEMA + ".idempotency_records WHERE completed", null);

        HttpResponse<byte[]> first = api.post("/payments", key,
            "{\"amount\":1000,\"currency\":\"EUR\",\"customer\":\"" + customer + "\",\"metadata\":{\"b\":\"2\",\"a\":\"1\"}}");
        HttpResponse<byte[]> retry = api.post("/payments", key,
            "{\"metadata\":{\"a\":\"1\",\"b\":\"2\"},\"customer\":\"" + customer + "\",\"currency\":\"EUR\",\"amount\":1000.0}");

        assertThat(first.statusCode()).as(Api.text(first)).isEqualTo(201);
        assertThat(Api.replayed(first)).isFalse();
        assertThat(retry.statusCode()).isEqualTo(201);
        assertThat(Api.replayed(retry)).isTrue();
        assertThat(retry.body()).isEqualTo(first.body());
        assertThat(api.stats().sideEffects()).isEqualTo(sideEffects + 1);
        assertThat(payments(customer)).isEqualTo(1);
        assertThat(count("SELECT count(*) FROM " + SCHEMA + ".idempotency_records WHERE completed", null))
            .isEqualTo(records + 1);

        // read back from the database: the same payment, metadata in the caller's order
        Payment created = api.read(first, Payment.class);
        HttpResponse<byte[]> read = api.get("/payments/" + created.id());
        assertThat(read.statusCode()).isEqualTo(200);
        assertThat(Api.text(read)).isEqualTo(Api.text(first));
    }

    @Test
    @DisplayName("S18: a create that fails after its business write leaves neither the payment row nor the"
        + " idempotency record; the retry with the same key runs exactly once and a replay runs nothing")
    void failureAfterWriteRollsBackBoth() throws SQLException {
        Api api = new Api(server.getURI(), json);
        String customer = "cus_" + UUID.randomUUID().toString().substring(0, 8);
        String key = Api.newKey();
        String body = "{\"amount\":2500,\"currency\":\"EUR\",\"customer\":\"" + customer + "\"}";
        SideEffectLedger.Stats before = api.stats();
        long records = records();

        failureInjection.failNextCreate();
        HttpResponse<byte[]> failed = api.post("/payments", key, body);

        assertThat(failed.statusCode()).isEqualTo(500);
        SideEffectLedger.Stats afterFailure = api.stats();
        assertThat(afterFailure.handlerExecutions()).isEqualTo(before.handlerExecutions() + 1); // it did run
        assertThat(payments(customer)).isZero();                  // its write was rolled back
        assertThat(records()).isEqualTo(records);                 // and so was its idempotency record
        assertThat(afterFailure.sideEffects()).isEqualTo(before.sideEffects());
        assertThat(afterFailure.payments()).isEqualTo(before.payments());

        HttpResponse<byte[]> retry = api.post("/payments", key, body);
        assertThat(retry.statusCode()).as(Api.text(retry)).isEqualTo(201);
        assertThat(Api.replayed(retry)).isFalse();                // a fresh execution, not a replay
        assertThat(payments(customer)).isEqualTo(1);
        assertThat(records()).isEqualTo(records + 1);

        HttpResponse<byte[]> replay = api.post("/payments", key, body);
        assertThat(replay.statusCode()).isEqualTo(201);
        assertThat(Api.replayed(replay)).isTrue();
        assertThat(replay.body()).isEqualTo(retry.body());
        SideEffectLedger.Stats after = api.stats();
        assertThat(after.handlerExecutions()).isEqualTo(before.handlerExecutions() + 2);
        assertThat(after.sideEffects()).isEqualTo(before.sideEffects() + 1);
        assertThat(after.payments()).isEqualTo(before.payments() + 1);
        assertThat(payments(customer)).isEqualTo(1);
    }

    @Test
    @DisplayName("S14/S18: capture, refund and a refused refund in transactional mode; the refusal is stored and"
        + " replayed, the data and the side effects are in the database")
    void captureRefundAndRefusal() throws SQLException {
        Api api = new Api(server.getURI(), json);
        String customer = "cus_" + UUID.randomUUID().toString().substring(0, 8);
        Payment p = api.read(api.post("/payments", Api.newKey(),
            "{\"amount\":2500,\"currency\":\"EUR\",\"customer\":\"" + customer + "\"}"), Payment.class);
        long sideEffects = api.stats().sideEffects();

        assertThat(api.post("/payments/" + p.id() + "/capture", Api.newKey(), "{\"amount\":2000}").statusCode())
            .isEqualTo(200);
        HttpResponse<byte[]> refund = api.post("/payments/" + p.id() + "/refunds", Api.newKey(),
            "{\"amount\":1500,\"reason\":\"damaged\"}");
        assertThat(refund.statusCode()).isEqualTo(201);
        String refusedKey = Api.newKey();
        HttpResponse<byte[]> refused = api.post("/payments/" + p.id() + "/refunds", refusedKey, "{\"amount\":800}");
        assertThat(refused.statusCode()).isEqualTo(422);
        assertThat(Api.text(refused)).contains("\"code\":\"refund-exceeds-captured\"");
        HttpResponse<byte[]> refusedAgain = api.post("/payments/" + p.id() + "/refunds", refusedKey, "{\"amount\":800}");
        assertThat(Api.replayed(refusedAgain)).isTrue();
        assertThat(refusedAgain.body()).isEqualTo(refused.body());

        Payment stored = api.read(api.get("/payments/" + p.id()), Payment.class);
        assertThat(stored.status()).isEqualTo(PaymentStatus.PARTIALLY_REFUNDED);
        assertThat(stored.amountCaptured()).isEqualTo(2000);
        assertThat(stored.amountRefunded()).isEqualTo(1500);
        assertThat(stored.refunds()).extracting(Refund::amount).containsExactly(1500L);
        assertThat(api.stats().sideEffects()).isEqualTo(sideEffects + 2);
        assertThat(count("SELECT count(*) FROM " + SCHEMA + ".payment_refunds WHERE payment_id = ?", p.id()))
            .isEqualTo(1);
        assertThat(count("SELECT count(*) FROM " + SCHEMA + ".payment_side_effects WHERE payment_id = ?", p.id()))
            .isEqualTo(3);
    }

    @Test
    @DisplayName("S18: concurrent refunds of one payment, each with its own key, on the JDBC storage: the row lock"
        + " serialises them, so the refunds never exceed the captured amount")
    void concurrentRefundsNeverOverRefund() throws Exception {
        Api api = new Api(server.getURI(), json);
        Payment p = api.read(api.post("/payments", Api.newKey(), "{\"amount\":1000,\"currency\":\"EUR\"}"),
            Payment.class);
        assertThat(api.post("/payments/" + p.id() + "/capture", Api.newKey(), null).statusCode()).isEqualTo(200);
        int n = 8; // 8 refunds of 300 against 1000 captured: exactly 3 fit
        ExecutorService pool = Executors.newFixedThreadPool(n);
        try {
            CountDownLatch go = new CountDownLatch(1);
            List<Future<HttpResponse<byte[]>>> answers = new ArrayList<>();
            for (int i = 0; i < n; i++) {
                answers.add(pool.submit(() -> {
                    go.await();
                    return api.post("/payments/" + p.id() + "/refunds", Api.newKey(), "{\"amount\":300}");
                }));
            }
            go.countDown();
            List<Integer> statuses = new ArrayList<>();
            for (Future<HttpResponse<byte[]>> f : answers) {
                statuses.add(f.get(30, TimeUnit.SECONDS).statusCode());
            }
            assertThat(statuses).filteredOn(s -> s == 201).hasSize(3);
            assertThat(statuses).filteredOn(s -> s == 422).hasSize(n - 3);
        } finally {
            pool.shutdownNow();
        }
        Payment stored = api.read(api.get("/payments/" + p.id()), Payment.class);
        assertThat(stored.amountRefunded()).isEqualTo(900);
        assertThat(stored.refunds()).hasSize(3);
        assertThat(count("SELECT count(*) FROM " + SCHEMA + ".payment_refunds WHERE payment_id = ?", p.id()))
            .isEqualTo(3);
    }

    private static long payments(String customer) throws SQLException {
        return count("SELECT count(*) FROM " + SCHEMA + ".payments WHERE customer = ?", customer);
    }

    private static long records() throws SQLException {
        return count("SELECT count(*) FROM " + SCHEMA + ".idempotency_records", null);
    }

    private static long count(String sql, String param) {
        return TestPostgres.count(sql, param);
    }
}
