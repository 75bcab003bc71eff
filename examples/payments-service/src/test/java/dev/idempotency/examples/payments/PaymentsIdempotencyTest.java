package dev.idempotency.examples.payments;

import dev.idempotency.testsupport.Await;
import io.micronaut.json.JsonMapper;
import io.micronaut.runtime.server.EmbeddedServer;
import io.micronaut.test.extensions.junit5.annotation.MicronautTest;
import jakarta.inject.Inject;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.DisplayName;
import org.junit.jupiter.api.Test;

import java.net.http.HttpResponse;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;

import static dev.idempotency.examples.payments.Api.newKey;
import static dev.idempotency.examples.payments.Api.replayed;
import static dev.idempotency.examples.payments.Api.text;
import static org.assertj.core.api.Assertions.assertThat;

/**
 * What a client of the payments API sees of the Idempotency-Key contract, over HTTP, on the
 * filter's default in-memory store. Each test names the CONTRACT requirement it shows. Side
 * effects are read from {@code GET /stats}, as a demo would.
 */
@MicronautTest
class PaymentsIdempotencyTest {

    static final String PAYMENT = "{\"amount\":1000,\"currency\":\"EUR\",\"description\":\"Order 1001\"}";

    @Inject
    EmbeddedServer server;
    @Inject
    JsonMapper json;
    @Inject
    SideEffectLedger ledger;

    Api api;

    @BeforeEach
    void setUp() {
        api = new Api(server.getURI(), json);
    }

    static void assertFilterProblem(HttpResponse<byte[]> r, int status, String code) {
        assertThat(r.statusCode()).isEqualTo(status);
        assertThat(r.headers().firstValue("Content-Type")).hasValue("application/problem+json");
        assertThat(r.headers().firstValue("Link")).hasValueSatisfying(l -> assertThat(l).contains("rel=\"describedby\""));
        assertThat(text(r)).contains("\"code\":\"" + code + "\"").contains("\"status\":" + status);
        assertThat(replayed(r)).isFalse();
    }

    @Test
    @DisplayName("S13: a retried create replays the same 201, Location and body with Idempotent-Replayed: true; one side effect")
    void retriedCreateIsReplayed() {
        SideEffectLedger.Stats before = api.stats();
        String key = newKey();

        HttpResponse<byte[]> first = api.post("/payments", key, PAYMENT);
        HttpResponse<byte[]> retry = api.post("/payments", key, PAYMENT);

        assertThat(first.statusCode()).isEqualTo(201);
        assertThat(replayed(first)).isFalse();
        Payment created = api.read(first, Payment.class);
        assertThat(created.status()).isEqualTo(PaymentStatus.AUTHORIZED);
        assertThat(created.amount()).isEqualTo(1000);
        assertThat(first.headers().firstValue("Location")).hasValue("/payments/" + created.id());

        assertThat(retry.statusCode()).isEqualTo(201);
        assertThat(replayed(retry)).isTrue();
        assertThat(retry.body()).isEqualTo(first.body());
        assertThat(retry.headers().firstValue("Location")).isEqualTo(first.headers().firstValue("Location"));

        SideEffectLedger.Stats after = api.stats();
        assertThat(after.sideEffects()).isEqualTo(before.sideEffects() + 1);
        assertThat(after.handlerExecutions()).isEqualTo(before.handlerExecutions() + 1);
        assertThat(after.payments()).isEqualTo(before.payments() + 1);
    }

    @Test
    @DisplayName("O4: the outcome events count a create and its retry as one execution and one replay")
    void outcomeEventsTellAReplayFromAPayment() {
        Map<?, ?> before = api.read(api.get("/stats/outcomes"), Map.class);
        String key = newKey();
        api.post("/payments", key, PAYMENT);
        api.post("/payments", key, PAYMENT);
        Map<?, ?> after = api.read(api.get("/stats/outcomes"), Map.class);
        assertThat(count(after, "executed") - count(before, "executed")).isEqualTo(1);
        assertThat(count(after, "replayed") - count(before, "replayed")).isEqualTo(1);
    }

    private static long count(Map<?, ?> outcomes, String outcome) {
        Object n = outcomes.get(outcome);
        return n == null ? 0 : ((Number) n).longValue();
    }

    @Test
    @DisplayName("S9: the same key with another amount is 422 idempotency-key-reused; nothing happens and the original still replays")
    void sameKeyOtherAmount() {
        String key = newKey();
        HttpResponse<byte[]> first = api.post("/payments", key, PAYMENT);
        SideEffectLedger.Stats before = api.stats();

        HttpResponse<byte[]> other = api.post("/payments", key, PAYMENT.replace("1000", "2000"));

        assertFilterProblem(other, 422, "idempotency-key-reused");
        assertThat(api.stats()).isEqualTo(before);
        HttpResponse<byte[]> retry = api.post("/payments", key, PAYMENT);
        assertThat(replayed(retry)).isTrue();
        assertThat(retry.body()).isEqualTo(first.body());
    }

    @Test
    @DisplayName("S3/S20: a create without Idempotency-Key is 400 idempotency-key-missing and creates nothing")
    void missingKey() {
        SideEffectLedger.Stats before = api.stats();
        HttpResponse<byte[]> r = api.post("/payments", null, PAYMENT);
        assertFilterProblem(r, 400, "idempotency-key-missing");
        assertThat(api.stats()).isEqualTo(before);
    }

    @Test
    @DisplayName("S5: a malformed key is 400 idempotency-key-invalid and creates nothing")
    void malformedKey() {
        SideEffectLedger.Stats before = api.stats();
        assertFilterProblem(api.post("/payments", "\"unterminated", PAYMENT), 400, "idempotency-key-invalid");
        assertThat(api.stats()).isEqualTo(before);
    }

    @Test
    @DisplayName("S7: reordered members, other whitespace and 1000.0 for 1000 are the same request: replayed, not 422")
    void canonicalJson() {
        String key = newKey();
        HttpResponse<byte[]> first = api.post("/payments", key, PAYMENT);
        HttpResponse<byte[]> same = api.post("/payments", key,
            "{ \"description\": \"Order 1001\",\n  \"currency\": \"EUR\", \"amount\": 1000.0 }");
        assertThat(replayed(same)).isTrue();
        assertThat(same.body()).isEqualTo(first.body());
    }

    @Test
    @DisplayName("S1: PATCH is covered: a retried update replays; another change under the same key is 422")
    void patchIsIdempotent() {
        Payment p = api.read(api.post("/payments", newKey(), PAYMENT), Payment.class);
        SideEffectLedger.Stats before = api.stats();
        String key = newKey();
        String change = "{\"description\":\"Order 1001 (gift)\",\"metadata\":{\"order\":\"1001\"}}";

        HttpResponse<byte[]> first = api.patch("/payments/" + p.id(), key, change);
        HttpResponse<byte[]> retry = api.patch("/payments/" + p.id(), key, change);
        HttpResponse<byte[]> other = api.patch("/payments/" + p.id(), key, "{\"description\":\"something else\"}");

        assertThat(first.statusCode()).isEqualTo(200);
        Payment updated = api.read(first, Payment.class);
        assertThat(updated.description()).isEqualTo("Order 1001 (gift)");
        assertThat(updated.metadata()).containsEntry("order", "1001");
        assertThat(replayed(retry)).isTrue();
        assertThat(retry.body()).isEqualTo(first.body());
        assertFilterProblem(other, 422, "idempotency-key-reused");
        assertThat(api.stats().byOperation().get("update")).isEqualTo(before.byOperation().get("update") + 1);
        assertThat(api.stats().sideEffects()).isEqualTo(before.sideEffects() + 1);
    }

    @Test
    @DisplayName("S1: a GET with an Idempotency-Key is an ordinary read: it runs every time and is never replayed")
    void getWithKeyIsOrdinary() {
        Payment p = api.read(api.post("/payments", newKey(), PAYMENT), Payment.class);
        String key = newKey();

        HttpResponse<byte[]> before = api.get("/payments/" + p.id(), "Idempotency-Key", key);
        api.post("/payments/" + p.id() + "/capture", newKey(), "{}");
        HttpResponse<byte[]> after = api.get("/payments/" + p.id(), "Idempotency-Key", key);

        assertThat(before.statusCode()).isEqualTo(200);
        assertThat(after.statusCode()).isEqualTo(200);
        assertThat(replayed(before)).isFalse();
        assertThat(replayed(after)).isFalse();
        assertThat(api.read(before, Payment.class).status()).isEqualTo(PaymentStatus.AUTHORIZED);
        assertThat(api.read(after, Payment.class).status()).isEqualTo(PaymentStatus.CAPTURED);
        assertThat(api.get("/payments", "Idempotency-Key", key).statusCode()).isEqualTo(200);
    }

    @Test
    @DisplayName("S10/S17: 16 concurrent creates with one key make exactly one payment and one side effect")
    void concurrentDuplicates() throws Exception {
        SideEffectLedger.Stats before = api.stats();
        String key = newKey();
        int threads = 16;
        ExecutorService pool = Executors.newFixedThreadPool(threads);
        CountDownLatch start = new CountDownLatch(1);
        List<Future<HttpResponse<byte[]>>> futures = new ArrayList<>();
        try {
            for (int i = 0; i < threads; i++) {
                futures.add(pool.submit(() -> {
                    start.await();
                    return api.post("/payments", key, PAYMENT);
                }));
            }
            start.countDown();
            List<HttpResponse<byte[]>> responses = new ArrayList<>();
            for (Future<HttpResponse<byte[]>> f : futures) {
                responses.add(f.get(30, TimeUnit.SECONDS));
            }

            List<HttpResponse<byte[]>> created = responses.stream().filter(r -> r.statusCode() == 201).toList();
            List<HttpResponse<byte[]>> conflicts = responses.stream().filter(r -> r.statusCode() == 409).toList();
            assertThat(created.size() + conflicts.size()).as("every answer is 201 or 409").isEqualTo(threads);
            assertThat(created.stream().filter(r -> !replayed(r)).count()).as("originals").isEqualTo(1);
            assertThat(created).allSatisfy(r -> assertThat(r.body()).isEqualTo(created.get(0).body()));
            assertThat(conflicts).allSatisfy(r -> assertFilterProblem(r, 409, "idempotency-request-in-progress"));
        } finally {
            pool.shutdownNow();
        }
        SideEffectLedger.Stats after = api.stats();
        assertThat(after.sideEffects()).isEqualTo(before.sideEffects() + 1);
        assertThat(after.payments()).isEqualTo(before.payments() + 1);
        assertThat(api.post("/payments", key, PAYMENT).headers().firstValue("Idempotent-Replayed")).hasValue("true");
    }

    @Test
    @DisplayName("16 concurrent creates with 16 keys, each sent twice, make 16 payments: side effects == operations")
    void sideEffectsEqualOperations() throws Exception {
        SideEffectLedger.Stats before = api.stats();
        int operations = 16;
        ExecutorService pool = Executors.newFixedThreadPool(8);
        try {
            List<Future<?>> futures = new ArrayList<>();
            for (int i = 0; i < operations; i++) {
                String key = newKey();
                String body = "{\"amount\":" + (100 + i) + ",\"currency\":\"USD\",\"customer\":\"cus_bulk\"}";
                futures.add(pool.submit(() -> {
                    HttpResponse<byte[]> first = api.post("/payments", key, body);
                    HttpResponse<byte[]> retry = api.post("/payments", key, body);
                    assertThat(first.statusCode()).isEqualTo(201);
                    assertThat(retry.body()).isEqualTo(first.body());
                    return null;
                }));
            }
            for (Future<?> f : futures) {
                f.get(30, TimeUnit.SECONDS);
            }
        } finally {
            pool.shutdownNow();
        }
        SideEffectLedger.Stats after = api.stats();
        assertThat(after.sideEffects()).isEqualTo(before.sideEffects() + operations);
        assertThat(after.payments()).isEqualTo(before.payments() + operations);
    }

    @Test
    @DisplayName("S11: a duplicate while the original still runs (X-Demo-Delay) is 409 with Retry-After; "
        + "another payload is 422; afterwards the duplicate replays")
    void inFlightDuplicate() throws Exception {
        String key = newKey();
        long started = ledger.snapshot(0).handlerExecutions();
        CompletableFuture<HttpResponse<byte[]>> slow =
            CompletableFuture.supplyAsync(() -> api.post("/payments", key, PAYMENT, "X-Demo-Delay", "2000"));
        // the slow handler holds the key now
        Await.until("the slow request reached its handler", Duration.ofSeconds(10),
            () -> ledger.snapshot(0).handlerExecutions() != started);

        HttpResponse<byte[]> duplicate = api.post("/payments", key, PAYMENT);
        HttpResponse<byte[]> otherPayload = api.post("/payments", key, PAYMENT.replace("1000", "1"));

        assertFilterProblem(duplicate, 409, "idempotency-request-in-progress");
        assertThat(duplicate.headers().firstValue("Retry-After")).hasValueSatisfying(s ->
            assertThat(Integer.parseInt(s)).isBetween(1, 30));
        assertFilterProblem(otherPayload, 422, "idempotency-key-reused");

        HttpResponse<byte[]> original = slow.get(15, TimeUnit.SECONDS);
        assertThat(original.statusCode()).isEqualTo(201);
        HttpResponse<byte[]> retry = api.post("/payments", key, PAYMENT);
        assertThat(replayed(retry)).isTrue();
        assertThat(retry.body()).isEqualTo(original.body());
    }
}
