package dev.idempotency.client;

import dev.idempotency.client.ClientTestApi.NewPayment;
import dev.idempotency.client.ClientTestApi.Payment;
import dev.idempotency.context.OperationContext;
import io.micronaut.context.annotation.Bean;
import io.micronaut.context.annotation.Factory;
import io.micronaut.context.annotation.Property;
import io.micronaut.context.annotation.Requires;
import io.micronaut.core.propagation.PropagatedContext;
import io.micronaut.http.client.HttpClient;
import io.micronaut.test.extensions.junit5.annotation.MicronautTest;
import io.micronaut.test.support.TestPropertyProvider;
import io.opentelemetry.api.GlobalOpenTelemetry;
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
    @Inject
    OpenTelemetry openTelemetry;
    private String baseUrl;

    @Override
    public Map<String, String> getProperties() {
        int port;
        try (ServerSocket socket = new ServerSocket(0)) {
            port = socket.getLocalPort();
        } catch (IOException e) {
            throw new IllegalStateException(e);
        }
        baseUrl = "http://127.0.0.1:" + port;
        return Map.of("micronaut.server.port", String.valueOf(port), "micronaut.http.services.traced.url", baseUrl);
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

    @Test
    @DisplayName("O4/C11: a call made inside a server operation carries the step its key was derived from and the"
        + " operation's key hash")
    void derivedCallNamesItsStep() {
        EXPORTER.reset();
        String operationId = "ab12cd34ef56" + "0".repeat(52);
        try (PropagatedContext.Scope ignored = PropagatedContext.getOrEmpty().plus(OperationContext.start(operationId))
            .propagate()) {
            IdempotentResult<Payment> result = client.execute(IdempotentRequest.post("/c/flaky/0",
                new NewPayment(100, "EUR")).step("charge-card"), Payment.class);
            assertThat(OperationContext.isDerived(result.key())).isTrue();
        }
        SpanData operation = spans("idempotency.client.operation").get(0);
        assertThat(operation.getAttributes().get(AttributeKey.stringKey("idempotency.step.name"))).isEqualTo("charge-card");
        assertThat(operation.getAttributes().get(AttributeKey.stringKey("idempotency.parent.key_hash")))
            .isEqualTo("ab12cd34ef56");
    }

    @Test
    @DisplayName("O4: a client made with IdempotentClient.create(...) traces through GlobalOpenTelemetry, looked up"
        + " when each operation starts")
    void handMadeClientUsesTheGlobalOpenTelemetry() {
        EXPORTER.reset();
        GlobalOpenTelemetry.resetForTest();
        try (HttpClient http = HttpClient.create(java.net.URI.create(baseUrl).toURL())) {
            IdempotentClient handMade = IdempotentClient.create(http); // before the SDK is registered
            GlobalOpenTelemetry.set(openTelemetry);
            IdempotentResult<Payment> result = handMade.execute(IdempotentRequest.post("/c/flaky/1",
                new NewPayment(100, "EUR")), Payment.class);
            assertThat(result.attempts()).isEqualTo(2);
        } catch (java.net.MalformedURLException e) {
            throw new IllegalStateException(e);
        } finally {
            GlobalOpenTelemetry.resetForTest();
        }
        SpanData operation = spans("idempotency.client.operation").get(0);
        assertThat(operation.getAttributes().get(AttributeKey.longKey("idempotency.attempts"))).isEqualTo(2);
        assertThat(spans("idempotency.client.attempt")).hasSize(2)
            .allSatisfy(a -> assertThat(a.getParentSpanId()).isEqualTo(operation.getSpanId()));
        assertThat(operation.getAttributes().get(AttributeKey.stringKey("idempotency.step.name"))).isNull();
    }

    @Inject
    TracedPayments declarative;

    @Test
    @DisplayName("O4: a declarative @IdempotentCall method, blocking and reactive, is one operation span with its"
        + " attempts as children")
    void declarativeBlockingAndReactive() {
        EXPORTER.reset();
        assertThat(declarative.flaky(2, new NewPayment(100, "EUR"))).isNotNull();
        assertThat(declarative.mono(1, new NewPayment(100, "EUR")).block()).isNotNull();

        List<SpanData> operations = spans("idempotency.client.operation");
        assertThat(operations).extracting(o -> o.getAttributes().get(AttributeKey.longKey("idempotency.attempts")))
            .containsExactlyInAnyOrder(3L, 2L);
        for (SpanData operation : operations) {
            long attempts = operation.getAttributes().get(AttributeKey.longKey("idempotency.attempts"));
            assertThat(spans("idempotency.client.attempt")).filteredOn(a -> a.getParentSpanId().equals(operation.getSpanId()))
                .hasSize((int) attempts);
            assertThat(operation.getAttributes().get(AttributeKey.stringKey("idempotency.outcome"))).isEqualTo("success");
        }
    }

    /** A declarative client of the same routes, through the client settings named "traced". */
    @io.micronaut.http.client.annotation.Client(id = "traced")
    @Requires(property = "client-tracing-test", value = "true")
    interface TracedPayments {
        @io.micronaut.http.annotation.Post("/c/flaky/{failures}")
        @IdempotentCall("traced")
        Payment flaky(@io.micronaut.http.annotation.PathVariable int failures,
                      @io.micronaut.http.annotation.Body NewPayment body);

        @io.micronaut.http.annotation.Post("/c/flaky/{failures}")
        @IdempotentCall("traced")
        reactor.core.publisher.Mono<Payment> mono(@io.micronaut.http.annotation.PathVariable int failures,
                                                  @io.micronaut.http.annotation.Body NewPayment body);
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
