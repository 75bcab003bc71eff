package dev.idempotency.server;

import ch.qos.logback.classic.Level;
import dev.idempotency.testsupport.LogCapture;
import dev.idempotency.testsupport.MutableClock;

import dev.idempotency.testsupport.Http;
import dev.idempotency.server.http.IdempotencyFilter;

import io.micrometer.core.instrument.MeterRegistry;
import io.micronaut.context.annotation.Property;
import io.micronaut.runtime.server.EmbeddedServer;
import io.micronaut.test.extensions.junit5.annotation.MicronautTest;
import jakarta.inject.Inject;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.DisplayName;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;
import org.junit.jupiter.params.provider.ValueSource;

import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.List;
import java.util.UUID;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * The filter end to end over HTTP, on the in-memory store with a fake clock. Each test names
 * the CONTRACT requirement it proves.
 */
@MicronautTest
@Property(name = "spec.name", value = "IdempotencyFilterTest")
@Property(name = "idempotency.max-stored-body-size", value = "4096")
@Property(name = "idempotency.max-request-body-size", value = "65536")
@Property(name = "idempotency.contract-url", value = "https://docs.example.com/idempotency")
class IdempotencyFilterTest {

    private static final String PAYMENT = "{\"amount\":1000,\"currency\":\"EUR\"}";

    @Inject
    EmbeddedServer server;
    @Inject
    TestApi api;
    @Inject
    ClassLevelApi classApi;
    @Inject
    MutableClock clock;
    @Inject
    MeterRegistry meters;

    Http http;

    @BeforeEach
    void setUp() {
        http = new Http(server.getURI());
        api.gate = new CountDownLatch(0);
    }

    static String key() {
        return "\"" + UUID.randomUUID() + "\"";
    }

    static String body(HttpResponse<byte[]> r) {
        return new String(r.body(), StandardCharsets.UTF_8);
    }

    private void assertProblem(HttpResponse<byte[]> r, int status, String code) {
        assertThat(r.statusCode()).isEqualTo(status);
        assertThat(r.headers().firstValue("Content-Type")).hasValue("application/problem+json");
        assertThat(r.headers().firstValue("Link"))
            .hasValue("<https://docs.example.com/idempotency>; rel=\"describedby\"");
        assertThat(body(r))
            .contains("\"type\":\"https://docs.example.com/idempotency#" + code + "\"")
            .contains("\"status\":" + status)
            .contains("\"code\":\"" + code + "\"")
            .contains("\"title\":")
            .contains("\"detail\":");
        assertThat(r.headers().firstValue("Idempotent-Replayed")).isEmpty();
        assertThat(r.headers().firstValue("Date")).hasValueSatisfying(d -> assertThat(d).matches(IMF_FIXDATE));
    }

    /** RFC 9110 section 5.6.7 IMF-fixdate. */
    private static final String IMF_FIXDATE = "(Mon|Tue|Wed|Thu|Fri|Sat|Sun), \\d{2} [A-Z][a-z]{2} \\d{4} \\d{2}:\\d{2}:\\d{2} GMT";

    // ---- S1, S2, S3: which requests --------------------------------------------------------

    @Test
    @DisplayName("S1: a key on a GET or PUT route that nothing covers is ignored: the request runs every time and"
        + " nothing is stored (an explicit @Idempotent on PUT covers it: RealSendersTest)")
    void safeAndUncoveredMethodsIgnoreTheKey() {
        String k = key();
        int before = api.calls("get");
        http.send("GET", "/t/get", k, null, null);
        HttpResponse<byte[]> second = http.send("GET", "/t/get", k, null, null);
        assertThat(api.calls("get")).isEqualTo(before + 2);
        assertThat(second.headers().firstValue("Idempotent-Replayed")).isEmpty();

        int putBefore = api.calls("put");
        http.send("PUT", "/t/put", k, "application/json", "{}".getBytes());
        http.send("PUT", "/t/put", k, "application/json", "{\"other\":1}".getBytes());
        assertThat(api.calls("put")).isEqualTo(putBefore + 2);
    }

    @Test
    @DisplayName("S1: PATCH is covered by default")
    void patchIsCovered() {
        String k = key();
        HttpResponse<byte[]> first = http.send("PATCH", "/t/payments/p1", k, "application/json", "{\"a\":1}".getBytes());
        HttpResponse<byte[]> second = http.send("PATCH", "/t/payments/p1", k, "application/json", "{\"a\":1}".getBytes());
        assertThat(first.statusCode()).isEqualTo(200);
        assertThat(second.body()).isEqualTo(first.body());
        assertThat(second.headers().firstValue("Idempotent-Replayed")).hasValue("true");
    }

    @Test
    @DisplayName("S2: routes without @Idempotent are untouched, even with a key")
    void unannotatedRoutePassesThrough() {
        String k = key();
        int before = api.calls("unannotated");
        http.postJson("/t/unannotated", k, "{}");
        http.postJson("/t/unannotated", k, "{}");
        assertThat(api.calls("unannotated")).isEqualTo(before + 2);
    }

    @Test
    @DisplayName("S2: @Idempotent on the class covers its methods; a method member overrides the class")
    void classLevelAnnotation() {
        HttpResponse<byte[]> missing = http.postJson("/class/required", null, "{}");
        assertProblem(missing, 400, "idempotency-key-missing");

        int before = classApi.calls.get();
        HttpResponse<byte[]> optional = http.postJson("/class/optional", null, "{}");
        assertThat(optional.statusCode()).isEqualTo(200);
        assertThat(classApi.calls.get()).isEqualTo(before + 1);
    }

    @Test
    @DisplayName("S3/S20: a missing key on a required route is 400 problem and the handler does not run")
    void missingKeyIsRejected() {
        int before = api.calls("payments");
        HttpResponse<byte[]> r = http.postJson("/t/payments", null, PAYMENT);
        assertProblem(r, 400, "idempotency-key-missing");
        assertThat(api.calls("payments")).isEqualTo(before);
    }

    @Test
    @DisplayName("S13: an original response never carries Idempotent-Replayed, even when the handler sets it")
    void originalNeverMarkedReplayed() {
        HttpResponse<byte[]> withoutKey = http.postJson("/t/sneaky", null, "{}");
        assertThat(withoutKey.statusCode()).isEqualTo(200);
        assertThat(withoutKey.headers().firstValue("Idempotent-Replayed")).isEmpty();
        HttpResponse<byte[]> withKey = http.postJson("/t/sneaky", key(), "{}");
        assertThat(withKey.headers().firstValue("Idempotent-Replayed")).isEmpty();
        HttpResponse<byte[]> unannotated = http.postJson("/t/unannotated", key(), "{}");
        assertThat(unannotated.headers().firstValue("Idempotent-Replayed")).isEmpty();
    }

    @Test
    @DisplayName("S2: without the key a required=false route runs normally each time")
    void optionalKey() {
        int before = api.calls("optional");
        assertThat(http.postJson("/t/optional", null, "{}").statusCode()).isEqualTo(200);
        assertThat(http.postJson("/t/optional", null, "{}").statusCode()).isEqualTo(200);
        assertThat(api.calls("optional")).isEqualTo(before + 2);
        String k = key();
        http.postJson("/t/optional", k, "{}");
        HttpResponse<byte[]> replay = http.postJson("/t/optional", k, "{}");
        assertThat(replay.headers().firstValue("Idempotent-Replayed")).hasValue("true");
        assertThat(api.calls("optional")).isEqualTo(before + 3);
    }

    // ---- S4, S5: the key -------------------------------------------------------------------

    @Test
    @DisplayName("S4: a bare token is the same key as the quoted sf-string")
    void bareTokenEqualsQuotedString() {
        String raw = UUID.randomUUID().toString();
        HttpResponse<byte[]> first = http.postJson("/t/payments", raw, PAYMENT);
        HttpResponse<byte[]> second = http.postJson("/t/payments", "\"" + raw + "\"", PAYMENT);
        assertThat(first.statusCode()).isEqualTo(201);
        assertThat(second.headers().firstValue("Idempotent-Replayed")).hasValue("true");
        assertThat(second.body()).isEqualTo(first.body());
    }

    @Test
    @DisplayName("S4: sf-strings with \\\" and \\\\ escapes are accepted over HTTP (decoding: IdempotencyKeyTest)")
    void escapedKeys() {
        String base = UUID.randomUUID().toString();
        HttpResponse<byte[]> quote = http.postJson("/t/payments", "\"" + base + "\\\"q\"", PAYMENT);
        HttpResponse<byte[]> backslash = http.postJson("/t/payments", "\"" + base + "\\\\q\"", PAYMENT);
        assertThat(quote.statusCode()).isEqualTo(201);
        assertThat(backslash.statusCode()).isEqualTo(201);
        assertThat(backslash.body()).isNotEqualTo(quote.body());
    }

    @Test
    @DisplayName("S5: a key of 255 characters is accepted, 256 is 400 idempotency-key-invalid")
    void keyLengthLimit() {
        String prefix = UUID.randomUUID().toString();
        String k255 = (prefix + "x".repeat(255)).substring(0, 255);
        String k256 = (prefix + "x".repeat(256)).substring(0, 256);
        assertThat(http.postJson("/t/payments", "\"" + k255 + "\"", PAYMENT).statusCode()).isEqualTo(201);
        int before = api.calls("payments");
        assertProblem(http.postJson("/t/payments", "\"" + k256 + "\"", PAYMENT), 400, "idempotency-key-invalid");
        assertProblem(http.postJson("/t/payments", k256, PAYMENT), 400, "idempotency-key-invalid");
        assertThat(api.calls("payments")).isEqualTo(before);
    }

    @ParameterizedTest(name = "S5: malformed key {0} is 400 idempotency-key-invalid")
    @ValueSource(strings = {"\"\"", "\"unterminated", "\"bad\\escape\"", "\"a\" trailing", "\"a\";param=1",
        "two words", "a,b"})
    void malformedKeys(String value) {
        int before = api.calls("payments");
        HttpResponse<byte[]> r = http.postJson("/t/payments", value, PAYMENT);
        assertProblem(r, 400, "idempotency-key-invalid");
        assertThat(body(r)).doesNotContain(value);
        assertThat(api.calls("payments")).isEqualTo(before);
    }

    @Test
    @DisplayName("S5: non-ASCII bytes in the key are 400 idempotency-key-invalid")
    void nonAsciiKey() {
        int before = api.calls("payments");
        Http.Raw quoted = http.rawPost("/t/payments", List.of("\"caf\u00e9\"".getBytes(StandardCharsets.UTF_8)));
        Http.Raw bare = http.rawPost("/t/payments", List.of("caf\u00e9".getBytes(StandardCharsets.ISO_8859_1)));
        assertThat(quoted.status()).isEqualTo(400);
        assertThat(quoted.body()).contains("idempotency-key-invalid");
        assertThat(bare.status()).isEqualTo(400);
        assertThat(bare.body()).contains("idempotency-key-invalid");
        assertThat(api.calls("payments")).isEqualTo(before);
    }

    @Test
    @DisplayName("S5: two Idempotency-Key header fields are 400 idempotency-key-invalid")
    void duplicateHeaderFields() {
        int before = api.calls("payments");
        String k = UUID.randomUUID().toString();
        Http.Raw r = http.rawPost("/t/payments", List.of(("\"" + k + "\"").getBytes(), ("\"" + k + "\"").getBytes()));
        assertThat(r.status()).isEqualTo(400);
        assertThat(r.body()).contains("\"code\":\"idempotency-key-invalid\"").doesNotContain(k);
        assertThat(api.calls("payments")).isEqualTo(before);
    }

    // ---- S6: scope -------------------------------------------------------------------------

    @Test
    @DisplayName("S6: the same key from two callers runs twice and never shows one caller the other's response")
    void sameKeyTwoCallers() {
        String k = key();
        int before = api.calls("payments");
        HttpResponse<byte[]> alice = http.postJson("/t/payments", k, PAYMENT, "X-Caller", "alice");
        HttpResponse<byte[]> bob = http.postJson("/t/payments", k, PAYMENT, "X-Caller", "bob");
        assertThat(api.calls("payments")).isEqualTo(before + 2);
        assertThat(bob.headers().firstValue("Idempotent-Replayed")).isEmpty();
        assertThat(bob.body()).isNotEqualTo(alice.body());
        HttpResponse<byte[]> aliceAgain = http.postJson("/t/payments", k, PAYMENT, "X-Caller", "alice");
        assertThat(aliceAgain.body()).isEqualTo(alice.body());
    }

    @Test
    @DisplayName("S6: the same key on two routes is two operations")
    void sameKeyTwoRoutes() {
        String k = key();
        HttpResponse<byte[]> a = http.postJson("/t/payments", k, PAYMENT);
        HttpResponse<byte[]> b = http.postJson("/t/optional", k, PAYMENT);
        assertThat(a.statusCode()).isEqualTo(201);
        assertThat(b.statusCode()).isEqualTo(200);
        assertThat(b.headers().firstValue("Idempotent-Replayed")).isEmpty();
    }

    // ---- S7, S8, S9: fingerprint -----------------------------------------------------------

    @Test
    @DisplayName("S7: reordered members, whitespace and 1.0 vs 1 replay instead of 422")
    void canonicalJsonReplays() {
        String k = key();
        HttpResponse<byte[]> first = http.postJson("/t/payments", k, "{\"amount\":1000,\"currency\":\"EUR\"}");
        HttpResponse<byte[]> reordered = http.postJson("/t/payments", k,
            "{ \"currency\" : \"EUR\",\n  \"amount\" : 1000.0 }");
        HttpResponse<byte[]> exponent = http.postJson("/t/payments", k, "{\"currency\":\"EUR\",\"amount\":1e3}");
        assertThat(reordered.statusCode()).isEqualTo(201);
        assertThat(reordered.headers().firstValue("Idempotent-Replayed")).hasValue("true");
        assertThat(reordered.body()).isEqualTo(first.body());
        assertThat(exponent.body()).isEqualTo(first.body());
    }

    @Test
    @DisplayName("S7: query parameters in another order are the same request; other values are not")
    void queryCanonicalOrder() {
        String k = key();
        http.postJson("/t/query?a=1&b=2", k, "{}");
        assertThat(http.postJson("/t/query?b=2&a=1", k, "{}").headers().firstValue("Idempotent-Replayed"))
            .hasValue("true");
        assertProblem(http.postJson("/t/query?a=1&b=3", k, "{}"), 422, "idempotency-key-reused");
    }

    @Test
    @DisplayName("S7: ignored JSON Pointers leave members out of the fingerprint")
    void ignoredPointers() {
        String k = key();
        http.postJson("/t/ignored", k, "{\"x\":1,\"meta\":{\"sent_at\":\"10:00\"}}");
        HttpResponse<byte[]> later = http.postJson("/t/ignored", k, "{\"x\":1,\"meta\":{\"sent_at\":\"10:05\"}}");
        assertThat(later.headers().firstValue("Idempotent-Replayed")).hasValue("true");
        assertProblem(http.postJson("/t/ignored", k, "{\"x\":2,\"meta\":{\"sent_at\":\"10:00\"}}"), 422,
            "idempotency-key-reused");
    }

    @Test
    @DisplayName("S8: a body over the fingerprint cap is 413 problem and the handler does not run")
    void bodyTooLarge() {
        int before = api.calls("payments");
        byte[] big = new byte[65537];
        HttpResponse<byte[]> r = http.post("/t/payments", key(), "application/json", big);
        assertProblem(r, 413, "idempotency-body-too-large");
        assertThat(api.calls("payments")).isEqualTo(before);
        byte[] exact = ("{\"amount\":1,\"currency\":\"" + "E".repeat(65536 - 26) + "\"}").getBytes();
        assertThat(exact.length).isEqualTo(65536);
        assertThat(http.post("/t/payments", key(), "application/json", exact).statusCode()).isEqualTo(201);
    }

    @Test
    @DisplayName("S8: a chunked body (no Content-Length) over the cap is 413; under the cap it is fingerprinted whole")
    void chunkedBodies() {
        int before = api.calls("payments");
        String k = UUID.randomUUID().toString();
        byte[] big = ("{\"amount\":1,\"currency\":\"" + "E".repeat(70_000) + "\"}").getBytes();
        Http.Raw tooLarge = http.chunkedPost("/t/payments", k, big);
        assertThat(tooLarge.status()).isEqualTo(413);
        assertThat(tooLarge.body()).contains("\"code\":\"idempotency-body-too-large\"");
        assertThat(api.calls("payments")).isEqualTo(before);

        byte[] body = ("{\"currency\":\"EUR\",\"pad\":\"" + "p".repeat(20_000) + "\",\"amount\":7}").getBytes();
        Http.Raw first = http.chunkedPost("/t/payments", k, body);
        assertThat(first.status()).isEqualTo(201);
        HttpResponse<byte[]> sameAsOneBlock = http.post("/t/payments", k, "application/json", body);
        assertThat(sameAsOneBlock.headers().firstValue("Idempotent-Replayed")).hasValue("true");
        byte[] changedAtTheEnd = ("{\"currency\":\"EUR\",\"pad\":\"" + "p".repeat(20_000) + "\",\"amount\":8}").getBytes();
        assertProblem(http.post("/t/payments", k, "application/json", changedAtTheEnd), 422, "idempotency-key-reused");
        assertThat(api.calls("payments")).isEqualTo(before + 1);
    }

    @Test
    @DisplayName("S9: same key with another payload is 422; the record is untouched and still replays")
    void mismatchIs422AndLeavesRecord() {
        String k = key();
        HttpResponse<byte[]> first = http.postJson("/t/payments", k, PAYMENT);
        int after = api.calls("payments");
        HttpResponse<byte[]> other = http.postJson("/t/payments", k, "{\"amount\":999,\"currency\":\"EUR\"}");
        assertProblem(other, 422, "idempotency-key-reused");
        assertThat(api.calls("payments")).isEqualTo(after);
        HttpResponse<byte[]> retry = http.postJson("/t/payments", k, PAYMENT);
        assertThat(retry.body()).isEqualTo(first.body());
        assertThat(retry.headers().firstValue("Idempotent-Replayed")).hasValue("true");
    }

    // ---- S10, S11: in flight ---------------------------------------------------------------

    @Test
    @DisplayName("S11: a duplicate while the original runs is 409 with Retry-After from the lease; "
        + "another payload in flight is 422")
    void duplicateInFlight() throws Exception {
        String k = key();
        api.gate = new CountDownLatch(1);
        api.entered = new CountDownLatch(1);
        CompletableFuture<HttpResponse<byte[]>> original =
            CompletableFuture.supplyAsync(() -> http.postJson("/t/slow", k, "{\"n\":1}"));
        assertThat(api.entered.await(10, TimeUnit.SECONDS)).isTrue();
        clock.advance(Duration.ofMillis(12_500));

        double conflicts = count("conflict");
        HttpResponse<byte[]> dup = http.postJson("/t/slow", k, "{\"n\":1}");
        assertProblem(dup, 409, "idempotency-request-in-progress");
        // 17.5 s of lease left, capped by in-flight-retry-after-max (5 s)
        assertThat(dup.headers().firstValue("Retry-After")).hasValue("5");
        assertThat(count("conflict")).isEqualTo(conflicts + 1);
        clock.advance(Duration.ofMillis(15_000));
        // 2.5 s of lease left: rounded up to whole seconds
        assertThat(http.postJson("/t/slow", k, "{\"n\":1}").headers().firstValue("Retry-After")).hasValue("3");
        assertProblem(http.postJson("/t/slow", k, "{\"n\":2}"), 422, "idempotency-key-reused");

        api.gate.countDown();
        HttpResponse<byte[]> done = original.get(10, TimeUnit.SECONDS);
        assertThat(done.statusCode()).isEqualTo(200);
        HttpResponse<byte[]> replay = http.postJson("/t/slow", k, "{\"n\":1}");
        assertThat(replay.body()).isEqualTo(done.body());
        assertThat(replay.headers().firstValue("Idempotent-Replayed")).hasValue("true");
    }

    @Test
    @DisplayName("S11: with inFlightWait a duplicate waits for the original and replays it instead of 409")
    void inFlightWaitReplays() throws Exception {
        String k = key();
        api.gate = new CountDownLatch(1);
        api.entered = new CountDownLatch(1);
        int before = api.calls("slow-wait");
        CompletableFuture<HttpResponse<byte[]>> original =
            CompletableFuture.supplyAsync(() -> http.postJson("/t/slow-wait", k, "{}"));
        assertThat(api.entered.await(10, TimeUnit.SECONDS)).isTrue();
        CompletableFuture<HttpResponse<byte[]>> duplicate =
            CompletableFuture.supplyAsync(() -> http.postJson("/t/slow-wait", k, "{}"));
        Thread.sleep(200); // let the duplicate reach the filter's wait loop; no timing is asserted
        api.gate.countDown();
        HttpResponse<byte[]> first = original.get(10, TimeUnit.SECONDS);
        HttpResponse<byte[]> second = duplicate.get(15, TimeUnit.SECONDS);
        assertThat(second.statusCode()).isEqualTo(200);
        assertThat(second.body()).isEqualTo(first.body());
        assertThat(second.headers().firstValue("Idempotent-Replayed")).hasValue("true");
        assertThat(api.calls("slow-wait")).isEqualTo(before + 1);
    }

    // ---- S13: replay ----------------------------------------------------------------------

    @Test
    @DisplayName("S13: a JSON replay has the same status, allow-listed headers and byte-identical body")
    void jsonReplayIsByteIdentical() {
        String k = key();
        HttpResponse<byte[]> first = http.postJson("/t/payments", k, PAYMENT);
        assertThat(first.statusCode()).isEqualTo(201);
        assertThat(first.headers().firstValue("Idempotent-Replayed")).isEmpty();
        HttpResponse<byte[]> replay = http.postJson("/t/payments", k, PAYMENT);
        assertThat(replay.statusCode()).isEqualTo(201);
        assertThat(replay.body()).isEqualTo(first.body());
        assertThat(replay.headers().firstValue("Idempotent-Replayed")).hasValue("true");
        assertThat(replay.headers().firstValue("Location")).isEqualTo(first.headers().firstValue("Location")).isPresent();
        assertThat(replay.headers().firstValue("ETag")).isEqualTo(first.headers().firstValue("ETag")).isPresent();
        assertThat(replay.headers().firstValue("Content-Type")).isEqualTo(first.headers().firstValue("Content-Type"))
            .isPresent();
        assertThat(replay.headers().firstValue("Date")).hasValueSatisfying(d -> assertThat(d).matches(IMF_FIXDATE));
    }

    @Test
    @DisplayName("S13: Set-Cookie and headers outside the allow-list are never replayed")
    void sensitiveHeadersNotReplayed() {
        String k = key();
        HttpResponse<byte[]> first = http.postJson("/t/payments", k, PAYMENT);
        assertThat(first.headers().firstValue("Set-Cookie")).isPresent();
        assertThat(first.headers().firstValue("X-Not-Stored")).isPresent();
        HttpResponse<byte[]> replay = http.postJson("/t/payments", k, PAYMENT);
        assertThat(replay.headers().firstValue("Set-Cookie")).isEmpty();
        assertThat(replay.headers().firstValue("X-Not-Stored")).isEmpty();
    }

    @Test
    @DisplayName("S13: a text body replays byte for byte, charset included")
    void textReplay() {
        String k = key();
        HttpResponse<byte[]> first = http.post("/t/text", k, "text/plain", "hello".getBytes());
        HttpResponse<byte[]> replay = http.post("/t/text", k, "text/plain", "hello".getBytes());
        assertThat(first.statusCode()).isEqualTo(200);
        assertThat(body(first)).startsWith("text \u00e9 ");
        assertThat(replay.body()).isEqualTo(first.body());
        assertThat(replay.headers().firstValue("Content-Type")).isEqualTo(first.headers().firstValue("Content-Type"));
    }

    @Test
    @DisplayName("S13: a binary body (every byte value) replays byte for byte")
    void binaryReplay() {
        String k = key();
        byte[] in = new byte[300];
        for (int i = 0; i < in.length; i++) {
            in[i] = (byte) (255 - i);
        }
        HttpResponse<byte[]> first = http.post("/t/binary", k, "application/octet-stream", in);
        HttpResponse<byte[]> replay = http.post("/t/binary", k, "application/octet-stream", in);
        assertThat(first.statusCode()).isEqualTo(200);
        assertThat(first.body()).hasSize(556);
        assertThat(replay.body()).isEqualTo(first.body());
        assertThat(replay.headers().firstValue("Content-Type")).hasValue("application/octet-stream");
        byte[] other = in.clone();
        other[7] ^= 1;
        assertProblem(http.post("/t/binary", k, "application/octet-stream", other), 422, "idempotency-key-reused");
    }

    // ---- S14: status policy ----------------------------------------------------------------

    @ParameterizedTest(name = "S14: a {0} result is stored and replayed")
    @ValueSource(ints = {200, 202, 400, 404, 409, 422})
    void nonServerErrorsAreStored(int status) {
        String k = key();
        HttpResponse<byte[]> first = http.postJson("/t/status/" + status, k, "{}");
        HttpResponse<byte[]> replay = http.postJson("/t/status/" + status, k, "{}");
        assertThat(first.statusCode()).isEqualTo(status);
        assertThat(replay.statusCode()).isEqualTo(status);
        assertThat(replay.body()).isEqualTo(first.body());
        assertThat(replay.headers().firstValue("Idempotent-Replayed")).hasValue("true");
    }

    @ParameterizedTest(name = "S14: a {0} result releases the key so a retry runs again")
    @ValueSource(ints = {500, 502, 503, 408, 425, 429})
    void serverErrorsRelease(int status) {
        assertReleased("/t/status/" + status, "status" + status, status);
    }

    @ParameterizedTest(name = "S14: {1} is a 500 and releases the key")
    @CsvSource({"boom, an exception in the handler", "unwritable, a response whose body cannot be encoded"})
    void failuresRelease(String route, String what) {
        assertReleased("/t/" + route, route, 500);
    }

    @Test
    @DisplayName("S7: a header the route names in fingerprintHeaders is part of the fingerprint, its name in any case")
    void fingerprintHeaderOfTheRoute() {
        String k = key();
        int before = api.calls("tenant-orders");
        HttpResponse<byte[]> first = http.postJson("/t/tenant-orders", k, "{\"sku\":\"a\"}", "X-Tenant", "acme");
        HttpResponse<byte[]> same = http.postJson("/t/tenant-orders", k, "{\"sku\":\"a\"}", "x-tenant", "acme");
        HttpResponse<byte[]> other = http.postJson("/t/tenant-orders", k, "{\"sku\":\"a\"}", "X-TENANT", "globex");
        HttpResponse<byte[]> none = http.postJson("/t/tenant-orders", k, "{\"sku\":\"a\"}");

        assertThat(first.statusCode()).isEqualTo(200);
        assertThat(same.headers().firstValue("Idempotent-Replayed")).hasValue("true");
        assertProblem(other, 422, "idempotency-key-reused");
        assertProblem(none, 422, "idempotency-key-reused");
        assertThat(api.calls("tenant-orders")).isEqualTo(before + 1);
    }

    @Test
    @DisplayName("S14: an exception the application's own handler answers with a 4xx releases the key too")
    void handledExceptionReleases() {
        assertThat(body(assertReleased("/t/declined", "declined", 402))).contains("card declined");
    }

    /**
     * Sends one request twice with one key and checks that the key was released (S14): both
     * answered {@code status}, the retry was not a replay, and the handler ran both times.
     *
     * @return the retry's response
     */
    private HttpResponse<byte[]> assertReleased(String path, String handler, int status) {
        String k = key();
        int before = api.calls(handler);
        HttpResponse<byte[]> first = http.postJson(path, k, "{}");
        HttpResponse<byte[]> retry = http.postJson(path, k, "{}");
        assertThat(first.statusCode()).isEqualTo(status);
        assertThat(retry.statusCode()).isEqualTo(status);
        assertThat(retry.headers().firstValue("Idempotent-Replayed")).isEmpty();
        assertThat(api.calls(handler)).isEqualTo(before + 2);
        return retry;
    }

    @Test
    @DisplayName("S14: the layer's own rejections are never stored")
    void rejectionsAreNotStored() {
        String k = key();
        assertProblem(http.post("/t/payments", k, "application/json", new byte[70_000]), 413,
            "idempotency-body-too-large");
        HttpResponse<byte[]> ok = http.postJson("/t/payments", k, PAYMENT);
        assertThat(ok.statusCode()).isEqualTo(201);
        assertThat(ok.headers().firstValue("Idempotent-Replayed")).isEmpty();
    }

    // ---- S15: omitted bodies ---------------------------------------------------------------

    @Test
    @DisplayName("S15: a body over the stored cap reaches the client whole; its replay is marked omitted")
    void oversizeBodyOmitted() {
        String k = key();
        int before = api.calls("big");
        HttpResponse<byte[]> first = http.postJson("/t/big", k, "{}");
        assertThat(first.statusCode()).isEqualTo(200);
        assertThat(first.body().length).isGreaterThan(8192);
        HttpResponse<byte[]> replay = http.postJson("/t/big", k, "{}");
        assertThat(replay.statusCode()).isEqualTo(200);
        assertThat(replay.body()).isEmpty();
        assertThat(replay.headers().firstValue("Idempotent-Replayed")).hasValue("true");
        assertThat(replay.headers().firstValue("Idempotency-Replay")).hasValue("omitted");
        assertThat(replay.headers().firstValue("Content-Type")).isEqualTo(first.headers().firstValue("Content-Type"));
        assertThat(api.calls("big")).isEqualTo(before + 1);
    }

    @Test
    @DisplayName("S15: a file body (StreamedFile) passes untouched and replays as omitted; publishers are captured, see StreamingResponsesTest")
    void streamedBodyOmitted() {
        String k = key();
        int before = api.calls("stream");
        HttpResponse<byte[]> first = http.postJson("/t/stream", k, "{}");
        assertThat(body(first)).startsWith("streamed ");
        HttpResponse<byte[]> replay = http.postJson("/t/stream", k, "{}");
        assertThat(replay.headers().firstValue("Idempotency-Replay")).hasValue("omitted");
        assertThat(replay.body()).isEmpty();
        assertThat(api.calls("stream")).isEqualTo(before + 1);
    }

    // ---- S16: retention --------------------------------------------------------------------

    @Test
    @DisplayName("S16: after the retention the same key runs as a new request")
    void retentionExpiry() {
        String k = key();
        int before = api.calls("payments");
        http.postJson("/t/payments", k, PAYMENT);
        clock.advance(Duration.ofHours(23));
        assertThat(http.postJson("/t/payments", k, PAYMENT).headers().firstValue("Idempotent-Replayed"))
            .hasValue("true");
        clock.advance(Duration.ofHours(2));
        HttpResponse<byte[]> fresh = http.postJson("/t/payments", k, "{\"amount\":5,\"currency\":\"USD\"}");
        assertThat(fresh.statusCode()).isEqualTo(201);
        assertThat(fresh.headers().firstValue("Idempotent-Replayed")).isEmpty();
        assertThat(api.calls("payments")).isEqualTo(before + 2);
    }

    // ---- S22: metrics ----------------------------------------------------------------------

    @Test
    @DisplayName("S22: requests are counted by outcome and store calls are timed")
    void metrics() {
        double executed = count("executed");
        double replayed = count("replayed");
        double mismatch = count("mismatch");
        double rejected = count("rejected");
        String k = key();
        http.postJson("/t/payments", k, PAYMENT);
        http.postJson("/t/payments", k, PAYMENT);
        http.postJson("/t/payments", k, "{\"amount\":1}");
        http.postJson("/t/payments", null, PAYMENT);
        assertThat(count("executed")).isEqualTo(executed + 1);
        assertThat(count("replayed")).isEqualTo(replayed + 1);
        assertThat(count("mismatch")).isEqualTo(mismatch + 1);
        assertThat(count("rejected")).isEqualTo(rejected + 1);
        assertThat(meters.get("idempotency.store.latency").tag("operation", "acquire").timer().count()).isPositive();
        assertThat(meters.get("idempotency.store.latency").tag("operation", "complete").timer().count()).isPositive();
    }

    private double count(String outcome) {
        return meters.get("idempotency.requests").tag("outcome", outcome).counter().count();
    }

    @Test
    @DisplayName("S22/S5: log lines name the outcome and a hash of the key, never the raw key or the body")
    void logsCarryOutcomeAndKeyHashOnly() {
        try (LogCapture log = LogCapture.of(IdempotencyFilter.LOG_CATEGORY, Level.DEBUG).start()) {
            String rawKey = "secret-key-" + UUID.randomUUID();
            String secretBody = "{\"amount\":4242,\"currency\":\"EUR\",\"card\":\"4111111111111111\"}";
            http.postJson("/t/payments", "\"" + rawKey + "\"", secretBody);
            http.postJson("/t/payments", "\"" + rawKey + "\"", secretBody);
            List<String> lines = log.lines();
            assertThat(lines).anyMatch(l -> l.contains("outcome=executed"));
            assertThat(lines).anyMatch(l -> l.contains("outcome=replayed"));
            assertThat(lines).allMatch(l -> l.matches(".*key=[0-9a-f]{12}( .*)?"));
            assertThat(String.join("\n", lines)).doesNotContain(rawKey).doesNotContain("4111111111111111")
                .doesNotContain("4242");
        }
    }
}
