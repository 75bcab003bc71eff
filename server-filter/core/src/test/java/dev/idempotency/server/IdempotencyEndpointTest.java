package dev.idempotency.server;

import ch.qos.logback.classic.Level;
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import dev.idempotency.testsupport.Http;
import dev.idempotency.testsupport.LogCapture;
import dev.idempotency.testsupport.MutableClock;
import io.micronaut.context.ApplicationContext;
import io.micronaut.context.annotation.Property;
import io.micronaut.runtime.server.EmbeddedServer;
import io.micronaut.test.extensions.junit5.annotation.MicronautTest;
import jakarta.inject.Inject;
import org.junit.jupiter.api.DisplayName;
import org.junit.jupiter.api.Test;

import java.io.IOException;
import java.net.URLEncoder;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;

import static org.assertj.core.api.Assertions.assertThat;

/** O3: the management endpoint /idempotency over the in-memory store, through real HTTP. */
@MicronautTest
@Property(name = "spec.name", value = "IdempotencyFilterTest")
@Property(name = "endpoints.idempotency.enabled", value = "true")
@Property(name = "endpoints.idempotency.sensitive", value = "false")
class IdempotencyEndpointTest {

    private static final ObjectMapper JSON = new ObjectMapper();
    private static final String SCOPE = "anonymous POST /t/payments";

    @Inject
    EmbeddedServer server;
    @Inject
    TestApi api;
    @Inject
    MutableClock clock;

    private Http http() {
        return new Http(server.getURI());
    }

    private JsonNode get(String path, int expectedStatus) throws IOException {
        HttpResponse<byte[]> r = http().send("GET", path, null, null, null);
        assertThat(r.statusCode()).as(Http.body(r)).isEqualTo(expectedStatus);
        return JSON.readTree(r.body());
    }

    private static String q(String value) {
        return URLEncoder.encode(value, StandardCharsets.UTF_8);
    }

    @Test
    @DisplayName("O3: one record by Idempotency-Key and scope: state and timing, never the stored body")
    void recordByKeyAndScope() throws IOException {
        String key = "\"" + UUID.randomUUID() + "\"";
        HttpResponse<byte[]> created = http().postJson("/t/payments", key, "{\"amount\":100,\"currency\":\"EUR\"}");
        assertThat(created.statusCode()).isEqualTo(201);

        JsonNode record = get("/idempotency/record?key=" + q(key) + "&scope=" + q(SCOPE), 200);
        assertThat(record.get("state").asText()).isEqualTo("completed");
        assertThat(record.get("status").asInt()).isEqualTo(201);
        assertThat(record.get("bodyBytes").asLong()).isEqualTo(created.body().length);
        assertThat(record.get("storeKey").asText()).matches("[0-9a-f]{64}");
        assertThat(record.has("expiresAt")).isTrue();
        assertThat(record.toString()).doesNotContain("pay_").doesNotContain("EUR").doesNotContain("session=");
        // the same record by its store key; the bare key value finds it too
        assertThat(get("/idempotency/" + record.get("storeKey").asText(), 200)).isEqualTo(record);
        assertThat(get("/idempotency/record?key=" + q(key.substring(1, key.length() - 1)) + "&scope=" + q(SCOPE), 200)
            .get("storeKey")).isEqualTo(record.get("storeKey"));
        // another scope is another record
        get("/idempotency/record?key=" + q(key) + "&scope=" + q("principal:alice POST /t/payments"), 404);
    }

    @Test
    @DisplayName("O3: a stuck in-progress key is listed, counted, and released with an audit line; its retry runs again")
    void stuckKeyListedAndReleased() throws Exception {
        api.gate = new CountDownLatch(1);
        api.entered = new CountDownLatch(1);
        String key = "\"" + UUID.randomUUID() + "\"";
        CompletableFuture<HttpResponse<byte[]>> original = CompletableFuture.supplyAsync(
            () -> http().postJson("/t/slow", key, "{\"n\":1}"));
        assertThat(api.entered.await(10, TimeUnit.SECONDS)).isTrue();
        int executions = api.calls("slow");
        clock.advance(Duration.ofMinutes(6));

        JsonNode stuck = get("/idempotency/in-progress?olderThan=PT5M", 200).get("records");
        JsonNode record = get("/idempotency/record?key=" + q(key) + "&scope=" + q("anonymous POST /t/slow"), 200);
        assertThat(record.get("state").asText()).isEqualTo("in-progress");
        assertThat(record.get("ageSeconds").asDouble()).isGreaterThanOrEqualTo(360);
        assertThat(stuck.findValuesAsText("storeKey")).contains(record.get("storeKey").asText());
        assertThat(get("/idempotency/in-progress?olderThan=PT7M", 200).get("records").findValuesAsText("storeKey"))
            .doesNotContain(record.get("storeKey").asText());
        JsonNode summary = get("/idempotency", 200);
        assertThat(summary.get("store").asText()).startsWith("in memory");
        assertThat(summary.at("/records/inProgress").asLong() + summary.at("/records/inProgressLeaseExpired").asLong())
            .isGreaterThanOrEqualTo(1);
        assertThat(summary.at("/size/maxBytes").asLong()).isPositive();

        String storeKey = record.get("storeKey").asText();
        long token = record.get("fencingToken").asLong();
        HttpResponse<byte[]> wrongToken = http().send("DELETE", "/idempotency/" + storeKey + "?fencingToken=" + (token + 1),
            null, null, null);
        assertThat(wrongToken.statusCode()).isEqualTo(409);
        assertThat(Http.body(wrongToken)).contains("now held with fencing token " + token);

        List<String> audit;
        try (LogCapture log = LogCapture.of("dev.idempotency.audit", Level.WARN).start()) {
            HttpResponse<byte[]> released = http().send("DELETE", "/idempotency/" + storeKey + "?fencingToken=" + token,
                null, null, null);
            assertThat(released.statusCode()).as(Http.body(released)).isEqualTo(200);
            assertThat(JSON.readTree(released.body()).get("released").asBoolean()).isTrue();
            audit = log.lines();
        }
        assertThat(audit).singleElement().satisfies(line -> assertThat(line)
            .contains("released in-progress record " + storeKey).contains("fencing token " + token)
            .contains("an unauthenticated caller"));
        get("/idempotency/" + storeKey, 404);

        // the original ends: its result is fenced out; a retry of the key runs the operation again
        api.gate.countDown();
        original.get(30, TimeUnit.SECONDS);
        HttpResponse<byte[]> retry = http().postJson("/t/slow", key, "{\"n\":1}");
        assertThat(retry.statusCode()).isEqualTo(200);
        assertThat(api.calls("slow")).isEqualTo(executions + 1);
        // a completed record cannot be released
        JsonNode done = get("/idempotency/" + storeKey, 200);
        HttpResponse<byte[]> refused = http().send("DELETE", "/idempotency/" + storeKey + "?fencingToken="
            + done.get("fencingToken").asLong(), null, null, null);
        assertThat(refused.statusCode()).isEqualTo(409);
        assertThat(Http.body(refused)).contains("only an in-progress record can be released");
    }

    @Test
    @DisplayName("O3: bad questions get a 400 that says what to ask instead, never a 500")
    void badInput() throws IOException {
        assertThat(get("/idempotency/whatever", 400).get("error").asText()).contains("use in-progress");
        assertThat(get("/idempotency/record?key=abc", 400).get("error").asText()).contains("give both key");
        assertThat(get("/idempotency/record?key=abc&scope=" + q("nobody:x POST /t"), 400).get("error").asText())
            .contains("caller:, principal: or anonymous:");
        assertThat(get("/idempotency/in-progress?limit=0", 400).get("error").asText()).contains("limit must be 1 to 1000");
        assertThat(http().send("GET", "/idempotency/in-progress?olderThan=soon", null, null, null).statusCode()).isEqualTo(400);
        assertThat(http().send("DELETE", "/idempotency/abc?fencingToken=1", null, null, null).statusCode()).isEqualTo(400);
        assertThat(http().send("DELETE", "/idempotency/" + "a".repeat(64), null, null, null).statusCode()).isEqualTo(400);
        assertThat(http().send("DELETE", "/idempotency/" + "a".repeat(64) + "?fencingToken=1", null, null, null)
            .statusCode()).isEqualTo(404);
    }

    @Test
    @DisplayName("O3: the endpoint is off unless turned on, and sensitive by default")
    void offByDefaultAndSensitive() {
        try (EmbeddedServer off = ApplicationContext.run(EmbeddedServer.class, Map.of("spec.name", "IdempotencyFilterTest"))) {
            assertThat(new Http(off.getURI()).send("GET", "/idempotency", null, null, null).statusCode()).isEqualTo(404);
        }
        try (EmbeddedServer sensitive = ApplicationContext.run(EmbeddedServer.class, Map.of("spec.name",
            "IdempotencyFilterTest", "endpoints.idempotency.enabled", "true"))) {
            assertThat(new Http(sensitive.getURI()).send("GET", "/idempotency", null, null, null).statusCode())
                .isIn(401, 403);
        }
    }
}
