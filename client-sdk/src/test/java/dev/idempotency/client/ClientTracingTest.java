package dev.idempotency.client;

import dev.idempotency.client.ClientTestApi.NewPayment;
import dev.idempotency.client.ClientTestApi.Payment;
import io.micronaut.context.annotation.Bean;
import io.micronaut.context.annotation.Factory;
import io.micronaut.context.annotation.Property;
import io.micronaut.context.annotation.Requires;
import io.micronaut.test.extensions.junit5.annotation.MicronautTest;
import io.micronaut.test.support.TestPropertyProvider;
import io.opentelemetry.api.OpenTelemetry;
import io.opentelemetry.api.common.AttributeKey;
import io.opentelemetry.sdk.OpenTelemetrySdk;
import io.opentelemetry.sdk.testing.exporter.InMemorySpanExporter;
import io.opentelemetry.sdk.trace.SdkTracerProvider;
import io.opentelemetry.sdk.trace.data.EventData;
import io.opentelemetry.sdk.trace.data.SpanData;
import io.opentelemetry.sdk.trace.export.SimpleSpanProcessor;
import jakarta.inject.Inject;
import jakarta.inject.Named;
import jakarta.inject.Singleton;
import org.junit.jupiter.api.DisplayName;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestInstance;

import java.io.IOException;
import java.net.ServerSocket;
import java.util.Comparator;
import java.util.List;
import java.util.Map;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * A client the application context makes, with an OpenTelemetry bean (the real SDK, its in-memory
 * exporter), shows one logical operation: one span, a numbered child span per attempt, and an
 * event per retry with its wait and reason (CONTRACT O4, C10's line in the trace).
 */
@MicronautTest
@TestInstance(TestInstance.Lifecycle.PER_CLASS)
@Property(name = "spec.name", value = "IdempotentClientIntegrationTest")
@Property(name = "client-tracing-test", value = "true")
@Property(name = "idempotency.client.traced.base-delay", value = "10ms")
class ClientTracingTest implements TestPropertyProvider {

    static final InMemorySpanExporter EXPORTER = InMemorySpanExporter.create();

    @Inject
    @Named("traced")
    IdempotentClient client;

    @Override
    public Map<String, String> getProperties() {
        int port;
        try (ServerSocket socket = new ServerSocket(0)) {
            port = socket.getLocalPort();
        } catch (IOException e) {
            throw new IllegalStateException(e);
        }
        return Map.of("micronaut.server.port", String.valueOf(port),
            "micronaut.http.services.traced.url", "http://127.0.0.1:" + port);
    }

    @Test
    @DisplayName("O4: an operation with three attempts (503, 503, 201) is one span with three numbered children and two retry events")
    void oneOperationThreeAttempts() {
        EXPORTER.reset();
        IdempotentResult<Payment> result = client.execute(
            IdempotentRequest.post("/c/flaky/2", new NewPayment(100, "EUR")), Payment.class);
        assertThat(result.attempts()).isEqualTo(3);

        List<SpanData> operations = spans("idempotency.client.operation");
        assertThat(operations).hasSize(1);
        SpanData operation = operations.get(0);
        assertThat(operation.getAttributes().get(AttributeKey.stringKey("idempotency.outcome"))).isEqualTo("success");
        assertThat(operation.getAttributes().get(AttributeKey.longKey("idempotency.attempts"))).isEqualTo(3);
        assertThat(operation.getAttributes().get(AttributeKey.booleanKey("idempotency.replayed"))).isFalse();
        assertThat(operation.getAttributes().get(AttributeKey.stringKey("idempotency.operation")))
            .isEqualTo("POST /c/flaky/2");
        String hash = operation.getAttributes().get(AttributeKey.stringKey("idempotency.key_hash"));
        assertThat(hash).hasSize(12).doesNotContain(result.key().substring(0, 8));

        List<SpanData> attempts = spans("idempotency.client.attempt").stream()
            .filter(s -> s.getParentSpanId().equals(operation.getSpanId()))
            .sorted(Comparator.comparing(s -> s.getAttributes().get(AttributeKey.longKey("idempotency.attempt"))))
            .toList();
        assertThat(attempts).extracting(s -> s.getAttributes().get(AttributeKey.longKey("idempotency.attempt")))
            .containsExactly(1L, 2L, 3L);
        assertThat(attempts).extracting(s -> s.getAttributes().get(AttributeKey.longKey("http.response.status_code")))
            .containsExactly(503L, 503L, 201L);

        List<EventData> retries = operation.getEvents();
        assertThat(retries).extracting(EventData::getName).containsExactly("idempotency.retry", "idempotency.retry");
        assertThat(retries).allSatisfy(e -> {
            assertThat(e.getAttributes().get(AttributeKey.stringKey("idempotency.retry.reason"))).contains("503");
            assertThat(e.getAttributes().get(AttributeKey.longKey("idempotency.retry.wait_ms"))).isNotNull();
        });
    }

    private static List<SpanData> spans(String name) {
        return EXPORTER.getFinishedSpanItems().stream().filter(s -> s.getName().equals(name)).toList();
    }

    @Factory
    @Requires(property = "client-tracing-test", value = "true")
    static class Tracing {
        @Bean
        @Singleton
        OpenTelemetry openTelemetry() {
            return OpenTelemetrySdk.builder()
                .setTracerProvider(SdkTracerProvider.builder().addSpanProcessor(SimpleSpanProcessor.create(EXPORTER)).build())
                .build();
        }
    }
}
