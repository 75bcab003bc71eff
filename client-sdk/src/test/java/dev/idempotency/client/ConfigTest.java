package dev.idempotency.client;

import io.micronaut.context.ApplicationContext;
import io.micronaut.inject.qualifiers.Qualifiers;
import org.junit.jupiter.api.DisplayName;
import org.junit.jupiter.api.Test;

import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.Set;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

class ConfigTest {

    @Test
    @DisplayName("C3/C6/C7: the defaults")
    void defaults() {
        IdempotentClientConfig c = IdempotentClientConfig.ofDefaults();
        assertThat(c.maxAttempts()).isEqualTo(4);
        assertThat(c.baseDelay()).isEqualTo(Duration.ofMillis(250));
        assertThat(c.multiplier()).isEqualTo(2.0);
        assertThat(c.maxDelay()).isEqualTo(Duration.ofSeconds(10));
        assertThat(c.deadline()).isEqualTo(Duration.ofSeconds(30));
        assertThat(c.retryableStatuses()).containsExactlyInAnyOrder(408, 409, 425, 429, 500, 502, 503, 504);
        assertThat(c.keyFormat()).isEqualTo(KeyFormat.QUOTED);
        assertThat(c.budgetEnabled()).isTrue();
    }

    @Test
    @DisplayName("the builder fails fast with the bad value in the message")
    void failFast() {
        var b = IdempotentClientConfig.custom();
        assertThatThrownBy(() -> b.maxAttempts(0)).hasMessageContaining("got: 0");
        assertThatThrownBy(() -> b.maxAttempts(101)).hasMessageContaining("got: 101");
        assertThatThrownBy(() -> b.baseDelay(Duration.ZERO)).hasMessageContaining("got: PT0S");
        assertThatThrownBy(() -> b.baseDelay(null)).hasMessageContaining("got: null");
        assertThatThrownBy(() -> b.multiplier(0.5)).hasMessageContaining("got: 0.5");
        assertThatThrownBy(() -> b.multiplier(Double.NaN)).hasMessageContaining("got: NaN");
        assertThatThrownBy(() -> b.deadline(Duration.ofSeconds(-1))).hasMessageContaining("got: PT-1S");
        assertThatThrownBy(() -> b.attemptTimeout(Duration.ZERO)).hasMessageContaining("got: PT0S");
        assertThatThrownBy(() -> b.maxRetryAfter(Duration.ofMillis(-1))).hasMessageContaining("got: PT-0.001S");
        assertThatThrownBy(() -> b.retryableStatuses(List.of(503, 422))).hasMessageContaining("422");
        assertThatThrownBy(() -> b.retryableStatuses(List.of(200))).hasMessageContaining("got: 200");
        assertThatThrownBy(() -> b.budgetCapacity(0.5)).hasMessageContaining("got: 0.5");
        assertThatThrownBy(() -> b.budgetRefillPerSuccess(0)).hasMessageContaining("got: 0.0");
        assertThatThrownBy(() -> b.headerName("Idempotency Key")).hasMessageContaining("'Idempotency Key'");
        assertThatThrownBy(() -> b.name(" ")).hasMessageContaining("' '");
        assertThatThrownBy(() -> IdempotentClientConfig.custom().baseDelay(Duration.ofSeconds(20)).build())
            .hasMessageContaining("PT10S").hasMessageContaining("PT20S");
    }

    @Test
    @DisplayName("idempotency.client.<name>.* makes a named IdempotentClient bean with those settings")
    void micronautConfiguration() {
        try (ApplicationContext ctx = ApplicationContext.run(Map.of(
            "idempotency.client.payments.client-id", "http://127.0.0.1:1",
            "idempotency.client.payments.max-attempts", 6,
            "idempotency.client.payments.base-delay", "100ms",
            "idempotency.client.payments.deadline", "5s",
            "idempotency.client.payments.retryable-statuses", "503,429",
            "idempotency.client.payments.key-format", "bare",
            "idempotency.client.orders.max-attempts", 2))) {
            IdempotentClient payments = ctx.getBean(IdempotentClient.class, Qualifiers.byName("payments"));
            assertThat(payments.config().name()).isEqualTo("payments");
            assertThat(payments.config().maxAttempts()).isEqualTo(6);
            assertThat(payments.config().baseDelay()).isEqualTo(Duration.ofMillis(100));
            assertThat(payments.config().deadline()).isEqualTo(Duration.ofSeconds(5));
            assertThat(payments.config().retryableStatuses()).isEqualTo(Set.of(503, 429));
            assertThat(payments.config().keyFormat()).isEqualTo(KeyFormat.BARE);
            assertThat(payments.retry().getName()).isEqualTo("payments");
            IdempotentClient orders = ctx.getBean(IdempotentClient.class, Qualifiers.byName("orders"));
            assertThat(orders.config().maxAttempts()).isEqualTo(2);
        }
    }

    @Test
    @DisplayName("a bad configured value stops the bean with the value in the message")
    void badConfiguration() {
        try (ApplicationContext ctx = ApplicationContext.run(Map.of("idempotency.client.bad.max-attempts", 0))) {
            assertThatThrownBy(() -> ctx.getBean(IdempotentClient.class, Qualifiers.byName("bad")))
                .hasStackTraceContaining("maxAttempts must be between 1 and 100, got: 0");
        }
    }

    @Test
    @DisplayName("a named client without client-id sends through the service of its own name (micronaut.http.services.<name>)")
    void clientIdDefaultsToName() throws Exception {
        com.sun.net.httpserver.HttpServer server = com.sun.net.httpserver.HttpServer.create(
            new java.net.InetSocketAddress("127.0.0.1", 0), 0);
        java.util.concurrent.atomic.AtomicReference<String> seenKey = new java.util.concurrent.atomic.AtomicReference<>();
        server.createContext("/orders", exchange -> {
            seenKey.set(exchange.getRequestHeaders().getFirst("Idempotency-Key"));
            byte[] body = "{\"id\":\"o1\"}".getBytes(java.nio.charset.StandardCharsets.UTF_8);
            exchange.getResponseHeaders().add("Content-Type", "application/json");
            exchange.sendResponseHeaders(201, body.length);
            exchange.getResponseBody().write(body);
            exchange.close();
        });
        server.start();
        try (ApplicationContext ctx = ApplicationContext.run(Map.of(
            "micronaut.http.services.orders.url", "http://127.0.0.1:" + server.getAddress().getPort(),
            "idempotency.client.orders.max-attempts", 6,
            "idempotency.client.plain.max-attempts", 2))) {
            IdempotentClient orders = ctx.getBean(IdempotentClient.class, Qualifiers.byName("orders"));
            IdempotentResult<Map> created = orders.execute(IdempotentRequest.post("/orders", Map.of("sku", "a")), Map.class);
            assertThat(created.status()).isEqualTo(201);
            assertThat(seenKey.get()).isNotBlank();
            // a name no service carries keeps the default client: relative URIs have no host there
            IdempotentClient plain = ctx.getBean(IdempotentClient.class, Qualifiers.byName("plain"));
            assertThatThrownBy(() -> plain.execute(IdempotentRequest.post("/orders", Map.of()), Map.class))
                .hasStackTraceContaining("no host");
        } finally {
            server.stop(0);
        }
    }
}
