package dev.idempotency.examples.payments;

import io.micronaut.json.JsonMapper;
import io.micronaut.runtime.server.EmbeddedServer;
import io.micronaut.test.extensions.junit5.annotation.MicronautTest;
import jakarta.inject.Inject;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.DisplayName;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

import java.net.http.HttpResponse;

import static dev.idempotency.examples.payments.Api.newKey;
import static dev.idempotency.examples.payments.Api.replayed;
import static org.assertj.core.api.Assertions.assertThat;

/**
 * The payments themselves: validation, capture and refund flows and their business errors, and
 * how the Idempotency-Key filter treats those errors (a 4xx is stored and replayed, CONTRACT S14).
 */
@MicronautTest
class PaymentsBusinessTest {

    @Inject
    EmbeddedServer server;
    @Inject
    JsonMapper json;

    Api api;

    @BeforeEach
    void setUp() {
        api = new Api(server.getURI(), json);
    }

    private Payment create(long amount) {
        HttpResponse<byte[]> r = api.post("/payments", newKey(), "{\"amount\":" + amount + ",\"currency\":\"EUR\"}");
        assertThat(r.statusCode()).isEqualTo(201);
        return api.read(r, Payment.class);
    }

    private Payment capture(String id, Long amount) {
        HttpResponse<byte[]> r = api.post("/payments/" + id + "/capture", newKey(),
            amount == null ? "{}" : "{\"amount\":" + amount + "}");
        assertThat(r.statusCode()).isEqualTo(200);
        return api.read(r, Payment.class);
    }

    private Payment get(String id) {
        return api.read(api.get("/payments/" + id), Payment.class);
    }

    private Problem assertProblem(HttpResponse<byte[]> r, int status, String code) {
        assertThat(r.statusCode()).isEqualTo(status);
        assertThat(r.headers().firstValue("Content-Type")).hasValue("application/problem+json");
        Problem p = api.read(r, Problem.class);
        assertThat(p.status()).isEqualTo(status);
        assertThat(p.code()).isEqualTo(code);
        assertThat(p.type()).isEqualTo(Problem.TYPE_BASE + code);
        return p;
    }

    @ParameterizedTest(name = "bad input {0} is 400 invalid-request: {1}")
    @CsvSource(delimiter = '|', value = {
        "{\"amount\":0,\"currency\":\"EUR\"}              | amount must be positive",
        "{\"amount\":-5,\"currency\":\"EUR\"}             | amount must be positive",
        "{\"amount\":10.5,\"currency\":\"EUR\"}           | amount must be a whole number of minor units",
        "{\"amount\":100000000,\"currency\":\"EUR\"}      | amount must be at most 99999999",
        "{\"currency\":\"EUR\"}                           | amount is required",
        "{\"amount\":1000}                                | currency is required",
        "{\"amount\":1000,\"currency\":\"eur\"}           | three upper-case letters",
        "{\"amount\":1000,\"currency\":\"EURO\"}          | three upper-case letters",
        "{\"amount\":1000,\"currency\":\"XYZ\"}           | currency XYZ is not an ISO 4217 currency",
        "{\"amount\":1000,\"currency\":\"EUR\",\"customer\":\"a b\"} | customer must be",
        "{\"amount\":\"ten\",\"currency\":\"EUR\"}        | member of the wrong type",
        "{\"amount\":                                     | not valid JSON",
    })
    void invalidCreate(String body, String message) {
        SideEffectLedger.Stats before = api.stats();
        HttpResponse<byte[]> r = api.post("/payments", newKey(), body);
        assertThat(assertProblem(r, 400, "invalid-request").detail()).contains(message);
        SideEffectLedger.Stats after = api.stats();
        assertThat(after.sideEffects()).isEqualTo(before.sideEffects());
        assertThat(after.payments()).isEqualTo(before.payments());
    }

    @Test
    @DisplayName("create, partial capture, partial refund, refund of the rest: states, amounts, Location, side effects")
    void captureAndRefundFlow() {
        SideEffectLedger.Stats before = api.stats();
        Payment p = create(1000);

        Payment captured = capture(p.id(), 800L);
        assertThat(captured.status()).isEqualTo(PaymentStatus.CAPTURED);
        assertThat(captured.amountCaptured()).isEqualTo(800);

        HttpResponse<byte[]> r1 = api.post("/payments/" + p.id() + "/refunds", newKey(),
            "{\"amount\":300,\"reason\":\"damaged item\"}");
        assertThat(r1.statusCode()).isEqualTo(201);
        Refund refund = api.read(r1, Refund.class);
        assertThat(refund.amount()).isEqualTo(300);
        assertThat(refund.reason()).isEqualTo("damaged item");
        assertThat(r1.headers().firstValue("Location")).hasValue("/payments/" + p.id() + "/refunds/" + refund.id());
        assertThat(api.read(api.get("/payments/" + p.id() + "/refunds/" + refund.id()), Refund.class)).isEqualTo(refund);
        assertThat(get(p.id()).status()).isEqualTo(PaymentStatus.PARTIALLY_REFUNDED);

        HttpResponse<byte[]> rest = api.post("/payments/" + p.id() + "/refunds", newKey(), "{}");
        assertThat(rest.statusCode()).isEqualTo(201);
        assertThat(api.read(rest, Refund.class).amount()).isEqualTo(500);

        Payment done = get(p.id());
        assertThat(done.status()).isEqualTo(PaymentStatus.REFUNDED);
        assertThat(done.amountRefunded()).isEqualTo(800);
        assertThat(done.refunds()).hasSize(2);

        SideEffectLedger.Stats after = api.stats();
        assertThat(after.sideEffects()).isEqualTo(before.sideEffects() + 4);
        assertThat(after.byOperation().get("refund")).isEqualTo(before.byOperation().get("refund") + 2);
    }

    @Test
    @DisplayName("S14: a refund beyond the captured amount is 422 refund-exceeds-captured; its retry replays the "
        + "stored 422 without running the handler, even after the payment changed")
    void refundTooLargeIsStoredAndReplayed() {
        Payment p = create(1000);
        capture(p.id(), 500L);
        String key = newKey();
        String body = "{\"amount\":600}";
        SideEffectLedger.Stats before = api.stats();

        HttpResponse<byte[]> first = api.post("/payments/" + p.id() + "/refunds", key, body);
        Problem problem = assertProblem(first, 422, "refund-exceeds-captured");
        assertThat(problem.detail()).contains("Cannot refund 600 EUR: 500 is refundable");
        assertThat(replayed(first)).isFalse();
        SideEffectLedger.Stats afterFirst = api.stats();
        assertThat(afterFirst.businessRejections()).isEqualTo(before.businessRejections() + 1);
        assertThat(afterFirst.sideEffects()).isEqualTo(before.sideEffects());

        HttpResponse<byte[]> retry = api.post("/payments/" + p.id() + "/refunds", key, body);
        assertThat(retry.statusCode()).isEqualTo(422);
        assertThat(replayed(retry)).isTrue();
        assertThat(retry.body()).isEqualTo(first.body());
        assertThat(api.stats()).isEqualTo(afterFirst);

        // a new key is a new operation: a refund that fits goes through ...
        assertThat(api.post("/payments/" + p.id() + "/refunds", newKey(), "{\"amount\":500}").statusCode())
            .isEqualTo(201);
        // ... while the first key keeps answering with its own stored outcome
        assertThat(api.post("/payments/" + p.id() + "/refunds", key, body).body()).isEqualTo(first.body());
        assertThat(get(p.id()).amountRefunded()).isEqualTo(500);
    }

    @Test
    @DisplayName("business errors: refund before capture 409, second capture 409, capture above the authorization 422")
    void stateErrors() {
        Payment p = create(1000);
        SideEffectLedger.Stats before = api.stats();

        assertThat(assertProblem(api.post("/payments/" + p.id() + "/refunds", newKey(), "{\"amount\":100}"), 409,
            "payment-not-captured").detail()).contains("capture it before refunding");
        assertThat(assertProblem(api.post("/payments/" + p.id() + "/capture", newKey(), "{\"amount\":1001}"), 422,
            "capture-exceeds-authorized").detail()).contains("only 1000 is authorized");
        assertThat(assertProblem(api.post("/payments/" + p.id() + "/capture", newKey(), "{\"amount\":0}"), 400,
            "invalid-request").detail()).contains("amount must be positive");
        assertThat(api.stats().sideEffects()).isEqualTo(before.sideEffects());

        capture(p.id(), null);
        assertThat(get(p.id()).amountCaptured()).isEqualTo(1000);
        assertThat(assertProblem(api.post("/payments/" + p.id() + "/capture", newKey(), "{}"), 409,
            "payment-already-captured").detail()).contains("captured already");
        assertThat(api.stats().sideEffects()).isEqualTo(before.sideEffects() + 1);
    }

    @Test
    @DisplayName("unknown payment: 404 payment-not-found on capture, refund, update and read; the 404 of a "
        + "keyed request is replayed (S14)")
    void unknownPayment() {
        String key = newKey();
        HttpResponse<byte[]> capture = api.post("/payments/pay_nope/capture", key, "{}");
        assertProblem(capture, 404, "payment-not-found");
        HttpResponse<byte[]> retry = api.post("/payments/pay_nope/capture", key, "{}");
        assertThat(replayed(retry)).isTrue();
        assertThat(retry.body()).isEqualTo(capture.body());

        assertProblem(api.post("/payments/pay_nope/refunds", newKey(), "{\"amount\":1}"), 404, "payment-not-found");
        assertProblem(api.patch("/payments/pay_nope", newKey(), "{\"description\":\"x\"}"), 404, "payment-not-found");
        assertProblem(api.get("/payments/pay_nope"), 404, "payment-not-found");
    }

    @Test
    @DisplayName("PATCH: description replaced, metadata merged, an empty value removes a key, an empty patch is 400")
    void update() {
        Payment p = create(700);
        HttpResponse<byte[]> a = api.patch("/payments/" + p.id(), newKey(),
            "{\"description\":\"first\",\"metadata\":{\"order\":\"1\",\"channel\":\"web\"}}");
        assertThat(a.statusCode()).isEqualTo(200);
        Payment b = api.read(api.patch("/payments/" + p.id(), newKey(), "{\"metadata\":{\"channel\":\"\",\"vip\":\"yes\"}}"),
            Payment.class);
        assertThat(b.description()).isEqualTo("first");
        assertThat(b.metadata()).containsOnlyKeys("order", "vip");
        assertProblem(api.patch("/payments/" + p.id(), newKey(), "{}"), 400, "invalid-request");
    }

    @Test
    @DisplayName("GET /payments lists newest first, filters by customer, validates limit")
    void list() {
        String customer = "cus_" + System.nanoTime();
        for (int i = 1; i <= 3; i++) {
            assertThat(api.post("/payments", newKey(),
                "{\"amount\":" + i + ",\"currency\":\"GBP\",\"customer\":\"" + customer + "\"}").statusCode()).isEqualTo(201);
        }
        PaymentsController.PaymentList page =
            api.read(api.get("/payments?customer=" + customer + "&limit=2"), PaymentsController.PaymentList.class);
        assertThat(page.count()).isEqualTo(2);
        assertThat(page.data()).allSatisfy(p -> assertThat(p.customer()).isEqualTo(customer));
        assertProblem(api.get("/payments?limit=0"), 400, "invalid-request");
    }

    @Test
    @DisplayName("X-Demo-Delay must be a number of milliseconds")
    void demoDelayValidated() {
        assertProblem(api.post("/payments", newKey(), "{\"amount\":1,\"currency\":\"EUR\"}", "X-Demo-Delay", "soon"),
            400, "invalid-request");
    }
}
