package dev.idempotency.interop;

import dev.idempotency.server.Idempotent;
import dev.idempotency.testsupport.Http;
import dev.idempotency.testsupport.Stores;
import io.micronaut.context.ApplicationContext;
import io.micronaut.context.annotation.Requires;
import io.micronaut.http.HttpResponse;
import io.micronaut.http.annotation.Body;
import io.micronaut.http.annotation.Controller;
import io.micronaut.http.annotation.PathVariable;
import io.micronaut.http.annotation.Post;
import io.micronaut.runtime.server.EmbeddedServer;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;

import java.util.HashMap;
import java.util.Map;
import java.util.UUID;
import java.util.concurrent.atomic.AtomicInteger;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * CONTRACT S6: a deploy renames a route (and moves it to another controller) while callers are
 * still retrying its keys. With an operation name the keys outlive the rename: the retry on the new
 * path replays what the old path ran, and another payload under the key is still 422. Two runs of
 * the application on one shared store; the in-memory store keeps nothing across runs, so it has
 * no rename to survive.
 */
class RenamedRouteTest {

    static final AtomicInteger CAPTURES = new AtomicInteger();

    @AfterEach
    void cleanUp() {
        Stores.removeCreated();
    }

    private static ApplicationContext run(Map<String, Object> store, String release) {
        Map<String, Object> p = new HashMap<>(store);
        p.put("spec.name", release);
        p.put("micronaut.server.port", "-1");
        ApplicationContext app = ApplicationContext.run(p);
        app.getBean(EmbeddedServer.class).start();
        return app;
    }

    private static Http http(ApplicationContext app) {
        return new Http(app.getBean(EmbeddedServer.class).getURI());
    }

    @ParameterizedTest(name = "S6: {0}: a capture retried after its route was renamed replays the first run's answer")
    @EnumSource(value = Stores.class, names = {"REDIS", "POSTGRES"})
    void renamedRouteKeepsItsKeys(Stores store) {
        Map<String, Object> shared = store.properties();
        String key = "\"" + UUID.randomUUID() + "\"";
        int before = CAPTURES.get();
        java.net.http.HttpResponse<byte[]> first;
        try (ApplicationContext release1 = run(shared, "RenamedRouteTest.release1")) {
            first = http(release1).postJson("/payments/pay_1/capture", key, "{\"amount\":500}");
        }
        try (ApplicationContext release2 = run(shared, "RenamedRouteTest.release2")) {
            Http http = http(release2);
            java.net.http.HttpResponse<byte[]> retry = http.postJson("/v2/captures/pay_1", key, "{\"amount\":500}");
            java.net.http.HttpResponse<byte[]> otherPayment = http.postJson("/v2/captures/pay_2", key, "{\"amount\":500}");

            assertThat(first.statusCode()).isEqualTo(200);
            assertThat(retry.statusCode()).isEqualTo(200);
            assertThat(retry.headers().firstValue("Idempotent-Replayed")).hasValue("true");
            assertThat(retry.body()).isEqualTo(first.body());
            assertThat(otherPayment.statusCode()).as("the path variables are part of the request").isEqualTo(422);
            assertThat(CAPTURES.get()).isEqualTo(before + 1);
        }
    }

    @Requires(property = "spec.name", value = "RenamedRouteTest.release1")
    @Controller("/payments")
    static class Release1 {
        @Post("/{id}/capture")
        @Idempotent(operation = "payments.capture")
        HttpResponse<Map<String, Object>> capture(@PathVariable String id, @Body Map<String, Object> body) {
            return HttpResponse.ok(Map.of("id", id, "capture", CAPTURES.incrementAndGet(), "release", 1));
        }
    }

    @Requires(property = "spec.name", value = "RenamedRouteTest.release2")
    @Controller("/v2/captures")
    static class Release2 {
        @Post("/{id}")
        @Idempotent(operation = "payments.capture")
        HttpResponse<Map<String, Object>> capture(@PathVariable String id, @Body Map<String, Object> body) {
            return HttpResponse.ok(Map.of("id", id, "capture", CAPTURES.incrementAndGet(), "release", 2));
        }
    }
}
