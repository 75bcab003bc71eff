package dev.idempotency.server;

import dev.idempotency.testsupport.Http;
import dev.idempotency.server.http.IdempotencyFilter;
import dev.idempotency.server.internal.engine.Coordinator;

import io.micronaut.context.ApplicationContext;
import io.micronaut.context.annotation.Requires;
import io.micronaut.http.annotation.Controller;
import io.micronaut.http.annotation.Post;
import io.micronaut.runtime.server.EmbeddedServer;
import org.junit.jupiter.api.DisplayName;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

import java.net.http.HttpResponse;
import java.util.Map;
import java.util.UUID;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/** Settings fail fast with the setting's name, and the global and strict modes (S1, S2, S4). */
class ConfigurationTest {

    @Controller("/cfg")
    @Requires(property = "spec.name", value = "ConfigurationTest")
    static class Api {
        @Post("/plain")
        Map<String, Object> plain() {
            return Map.of("at", System.nanoTime());
        }

        @Post("/annotated")
        @Idempotent
        Map<String, Object> annotated() {
            return Map.of("at", System.nanoTime());
        }

        final java.util.concurrent.atomic.AtomicInteger declined = new java.util.concurrent.atomic.AtomicInteger();

        @Post("/declined")
        @Idempotent
        Map<String, Object> declined() {
            throw new CardDeclined(declined.incrementAndGet());
        }

        @io.micronaut.http.annotation.Error(CardDeclined.class)
        io.micronaut.http.HttpResponse<Map<String, Object>> onDeclined(CardDeclined e) {
            return io.micronaut.http.HttpResponse.<Map<String, Object>>status(io.micronaut.http.HttpStatus.PAYMENT_REQUIRED)
                .body(Map.of("error", "card_declined", "attempt", e.attempt));
        }
    }

    static final class CardDeclined extends RuntimeException {
        final int attempt;

        CardDeclined(int attempt) {
            super("card declined", null, false, false);
            this.attempt = attempt;
        }
    }

    @Controller("/bad")
    @Requires(property = "spec.name", value = "ConfigurationTest-bad-annotation")
    static class BadApi {
        @Post("/duration")
        @Idempotent(retention = "forever")
        Map<String, Object> bad() {
            return Map.of();
        }
    }

    @Controller("/bad")
    @Requires(property = "spec.name", value = "ConfigurationTest-bad-header")
    static class BadHeaderApi {
        @Post("/header")
        @Idempotent(fingerprintHeaders = "X Tenant")
        Map<String, Object> bad() {
            return Map.of();
        }
    }

    private static EmbeddedServer start(Map<String, Object> props) {
        Map<String, Object> all = new java.util.HashMap<>(props);
        all.putIfAbsent("spec.name", "ConfigurationTest");
        all.put("micronaut.security.enabled", "false");
        all.put("micronaut.server.port", "-1");
        return ApplicationContext.run(EmbeddedServer.class, all);
    }

    @ParameterizedTest(name = "a bad {0} fails startup naming the setting")
    @CsvSource(delimiter = '|', value = {
        "idempotency.methods|GET|safe method GET",
        "idempotency.lease|-5s|idempotency.lease",
        "idempotency.stored-headers|Set-Cookie|set-cookie",
        "idempotency.stored-headers|Proxy-Authorization|proxy-authorization",
        "idempotency.ignored-json-pointers|meta/x|JSON Pointers",
        "idempotency.release-statuses|503|release-statuses",
        "idempotency.contract-url|/relative|absolute URI",
        "idempotency.store.memory.max-entries|0|max-entries must be at least 1",
        "idempotency.store.memory.max-entries|5000000|max-entries must be at most 4194304",
        "idempotency.store.memory.max-bytes|600GB|max-bytes must be at most 512GB",
    })
    void badSettingsFailFast(String setting, String value, String message) {
        assertThatThrownBy(() -> start(Map.of(setting, value)).close())
            .hasStackTraceContaining(message);
    }

    @Test
    @DisplayName("S2: a bad duration in @Idempotent fails startup, naming the route")
    void badAnnotationFailsStartup() {
        assertThatThrownBy(() -> start(Map.of("spec.name", "ConfigurationTest-bad-annotation")).close())
            .hasStackTraceContaining("@Idempotent(retention = \"forever\")")
            .hasStackTraceContaining("/bad/duration");
    }

    @Test
    @DisplayName("S7: a fingerprint header in @Idempotent that is not a header name fails startup, naming the route")
    void badFingerprintHeaderFailsStartup() {
        assertThatThrownBy(() -> start(Map.of("spec.name", "ConfigurationTest-bad-header")).close())
            .hasStackTraceContaining("@Idempotent(fingerprintHeaders) on")
            .hasStackTraceContaining("/bad/header")
            .hasStackTraceContaining("X Tenant");
    }

    @Test
    @DisplayName("S2: global mode honours a key on routes without @Idempotent; the key is optional there")
    void globalMode() {
        try (EmbeddedServer server = start(Map.of("idempotency.global", "true"))) {
            Http http = new Http(server.getURI());
            String k = "\"" + UUID.randomUUID() + "\"";
            HttpResponse<byte[]> first = http.postJson("/cfg/plain", k, "{}");
            HttpResponse<byte[]> replay = http.postJson("/cfg/plain", k, "{}");
            assertThat(replay.headers().firstValue("Idempotent-Replayed")).hasValue("true");
            assertThat(replay.body()).isEqualTo(first.body());
            assertThat(http.postJson("/cfg/plain", null, "{}").statusCode()).isEqualTo(200);
        }
    }

    @Test
    @DisplayName("S4: strict mode rejects the bare token form and accepts the sf-string")
    void strictMode() {
        try (EmbeddedServer server = start(Map.of("idempotency.strict", "true"))) {
            Http http = new Http(server.getURI());
            String raw = UUID.randomUUID().toString();
            HttpResponse<byte[]> bare = http.postJson("/cfg/annotated", raw, "{}");
            assertThat(bare.statusCode()).isEqualTo(400);
            assertThat(new String(bare.body())).contains("idempotency-key-invalid");
            assertThat(http.postJson("/cfg/annotated", "\"" + raw + "\"", "{}").statusCode()).isEqualTo(200);
        }
    }

    @Test
    @DisplayName("S1: the covered methods are configurable; PUT can be added")
    void configurableMethods() {
        try (EmbeddedServer server = start(Map.of("idempotency.methods", "POST,PUT", "idempotency.global", "true"))) {
            Http http = new Http(server.getURI());
            String k = "\"" + UUID.randomUUID() + "\"";
            assertThat(http.send("PATCH", "/cfg/plain", k, "application/json", "{}".getBytes()).statusCode())
                .isEqualTo(405);
            http.postJson("/cfg/plain", k, "{}");
            assertThat(http.postJson("/cfg/plain", k, "{}").headers().firstValue("Idempotent-Replayed")).hasValue("true");
        }
    }

    @Test
    @DisplayName("S14: a 4xx made by an exception handler releases the key by default, "
        + "and is stored and replayed with replay-handled-exceptions")
    void handledExceptions() {
        try (EmbeddedServer server = start(Map.of())) {
            Http http = new Http(server.getURI());
            Api api = server.getApplicationContext().getBean(Api.class);
            String k = "\"" + UUID.randomUUID() + "\"";
            int before = api.declined.get();
            assertThat(http.postJson("/cfg/declined", k, "{}").statusCode()).isEqualTo(402);
            HttpResponse<byte[]> again = http.postJson("/cfg/declined", k, "{}");
            assertThat(again.statusCode()).isEqualTo(402);
            assertThat(again.headers().firstValue("Idempotent-Replayed")).isEmpty();
            assertThat(api.declined.get()).isEqualTo(before + 2);
        }
        try (EmbeddedServer server = start(Map.of("idempotency.replay-handled-exceptions", "true"))) {
            Http http = new Http(server.getURI());
            Api api = server.getApplicationContext().getBean(Api.class);
            String k = "\"" + UUID.randomUUID() + "\"";
            int before = api.declined.get();
            HttpResponse<byte[]> first = http.postJson("/cfg/declined", k, "{}");
            HttpResponse<byte[]> replay = http.postJson("/cfg/declined", k, "{}");
            assertThat(replay.statusCode()).isEqualTo(402);
            assertThat(replay.headers().firstValue("Idempotent-Replayed")).hasValue("true");
            assertThat(replay.body()).isEqualTo(first.body());
            assertThat(api.declined.get()).isEqualTo(before + 1);
        }
    }

    @Test
    @DisplayName("idempotency.enabled=false switches every bean off, annotation validation included")
    void disabledSkipsValidation() {
        try (EmbeddedServer server = start(Map.of("idempotency.enabled", "false",
            "spec.name", "ConfigurationTest-bad-annotation"))) {
            assertThat(server.getApplicationContext().findBean(IdempotencyFilter.class)).isEmpty();
            assertThat(server.getApplicationContext().findBean(Coordinator.class)).isEmpty();
            // nor any bean that acts on requests: the HTTP adapter's, the engine's, the runtime's
            assertThat(server.getApplicationContext().getAllBeanDefinitions().stream()
                .map(definition -> definition.getBeanType().getName())
                .filter(name -> name.startsWith("dev.idempotency.server.http.")
                    || name.startsWith("dev.idempotency.server.internal.engine.")
                    || name.startsWith("dev.idempotency.server.internal.runtime.")))
                .isEmpty();
        }
    }

    @Test
    @DisplayName("idempotency.enabled=false removes the filter")
    void disabled() {
        try (EmbeddedServer server = start(Map.of("idempotency.enabled", "false"))) {
            assertThat(server.getApplicationContext().findBean(IdempotencyFilter.class)).isEmpty();
            Http http = new Http(server.getURI());
            assertThat(http.postJson("/cfg/annotated", null, "{}").statusCode()).isEqualTo(200);
        }
    }
}
