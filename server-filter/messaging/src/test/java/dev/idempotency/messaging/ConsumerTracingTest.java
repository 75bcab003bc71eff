package dev.idempotency.messaging;

import dev.idempotency.messaging.internal.ConsumerTracing;
import io.micronaut.context.ApplicationContext;
import io.micronaut.context.annotation.Bean;
import io.micronaut.context.annotation.Factory;
import io.micronaut.context.annotation.Requires;
import io.opentelemetry.api.OpenTelemetry;
import io.opentelemetry.api.common.AttributeKey;
import io.opentelemetry.api.trace.Span;
import io.opentelemetry.api.trace.SpanKind;
import io.opentelemetry.api.trace.StatusCode;
import io.opentelemetry.sdk.OpenTelemetrySdk;
import io.opentelemetry.sdk.common.CompletableResultCode;
import io.opentelemetry.sdk.testing.exporter.InMemorySpanExporter;
import io.opentelemetry.sdk.trace.SdkTracerProvider;
import io.opentelemetry.sdk.trace.data.SpanData;
import io.opentelemetry.sdk.trace.export.SimpleSpanProcessor;
import io.opentelemetry.sdk.trace.export.SpanExporter;
import jakarta.inject.Singleton;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.DisplayName;
import org.junit.jupiter.api.Test;

import java.nio.charset.StandardCharsets;
import java.util.Collection;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * CONTRACT O4 for messages: each delivery is one span {@code idempotency.consumer.process} that
 * continues the publisher's trace (M11) and says how it ended, through the application's
 * OpenTelemetry (the real SDK with its in-memory exporter); without an OpenTelemetry bean there
 * is no tracing at all.
 */
class ConsumerTracingTest {

    private static final InMemorySpanExporter EXPORTER = InMemorySpanExporter.create();
    private static final AttributeKey<String> OUTCOME = AttributeKey.stringKey("idempotency.outcome");
    private static final AttributeKey<String> REASON = AttributeKey.stringKey("idempotency.reason");
    private static final String TRACE_ID = "4bf92f3577b34da6a3ce929d0e0e4736";
    private static final String PUBLISHER_SPAN = "00f067aa0ba902b7";

    private final ApplicationContext context = ApplicationContext.run(Map.of("spec.name", "ConsumerTracingTest"));
    private final IdempotentConsumer consumer = context.getBean(IdempotentConsumers.class)
        .consumer(ConsumerSettings.of("ledger").withMaxAttempts(2));
    private final OpenTelemetry openTelemetry = context.getBean(OpenTelemetry.class);

    @AfterEach
    void stop() {
        context.close();
        EXPORTER.reset();
    }

    private static ReceivedMessage message(String id, int attempt, boolean traced) {
        Map<String, Object> headers = traced
            ? Map.of("traceparent", "00-" + TRACE_ID + "-" + PUBLISHER_SPAN + "-01", "tracestate", "vendor=ledger")
            : Map.of();
        return new ReceivedMessage(id, "{}".getBytes(StandardCharsets.UTF_8), "application/json", headers, "ledger",
            "payment.captured", attempt > 0, attempt);
    }

    private Disposition process(ReceivedMessage m, MessageHandler handler) {
        return consumer.process(m, handler).toCompletableFuture().orTimeout(10, TimeUnit.SECONDS).join();
    }

    private static List<SpanData> deliveries() {
        return EXPORTER.getFinishedSpanItems().stream().filter(s -> s.getName().equals("idempotency.consumer.process"))
            .toList();
    }

    @Test
    @DisplayName("O4: a delivery's span continues the publisher's trace, is the parent of the handler's spans, and"
        + " says processed, then duplicate")
    void processedThenDuplicate() {
        MessageHandler working = m -> {
            openTelemetry.getTracer("ledger").spanBuilder("post to ledger").startSpan().end(); // a child of the current span
            return CompletableFuture.completedFuture(null);
        };
        assertThat(process(message("m1", 0, true), working)).isEqualTo(new Disposition.Ack(DeliveryOutcome.PROCESSED));
        assertThat(process(message("m1", 0, true), working)).isEqualTo(new Disposition.Ack(DeliveryOutcome.DUPLICATE));

        List<SpanData> spans = deliveries();
        assertThat(spans).extracting(s -> s.getAttributes().get(OUTCOME)).containsExactly("processed", "duplicate");
        SpanData processed = spans.get(0);
        assertThat(processed.getKind()).isEqualTo(SpanKind.CONSUMER);
        assertThat(processed.getTraceId()).isEqualTo(TRACE_ID);
        assertThat(processed.getParentSpanId()).isEqualTo(PUBLISHER_SPAN);
        assertThat(processed.getSpanContext().getTraceState().get("vendor")).isEqualTo("ledger");
        assertThat(processed.getAttributes().get(AttributeKey.stringKey("idempotency.consumer"))).isEqualTo("ledger");
        assertThat(processed.getAttributes().get(AttributeKey.stringKey("messaging.message.id"))).isEqualTo("m1");
        assertThat(processed.getAttributes().get(AttributeKey.stringKey("idempotency.key_hash")))
            .isEqualTo(consumer.recordKey("m1").substring(0, 12));
        assertThat(processed.getStatus().getStatusCode()).isEqualTo(StatusCode.UNSET);
        SpanData work = EXPORTER.getFinishedSpanItems().stream().filter(s -> s.getName().equals("post to ledger"))
            .findFirst().orElseThrow();
        assertThat(work.getParentSpanId()).isEqualTo(processed.getSpanId());
        assertThat(EXPORTER.getFinishedSpanItems()).filteredOn(s -> s.getName().equals("post to ledger")).hasSize(1);
    }

    @Test
    @DisplayName("O4: a failing handler's deliveries say retried, then dead-lettered, with the reason and the failure")
    void retriedThenDeadLettered() {
        MessageHandler failing = m -> CompletableFuture.failedFuture(new IllegalStateException("card declined"));
        assertThat(process(message("m2", 0, true), failing)).isInstanceOf(Disposition.Retry.class);
        assertThat(process(message("m2", 1, true), failing)).isInstanceOf(Disposition.DeadLetter.class);

        List<SpanData> spans = deliveries();
        assertThat(spans).extracting(s -> s.getAttributes().get(OUTCOME)).containsExactly("retried", "dead-lettered");
        assertThat(spans).allSatisfy(s -> {
            assertThat(s.getStatus().getStatusCode()).isEqualTo(StatusCode.ERROR);
            assertThat(s.getAttributes().get(REASON)).contains("card declined");
            assertThat(s.getEvents()).anySatisfy(e -> assertThat(e.getName()).isEqualTo("exception"));
        });
        assertThat(spans).extracting(s -> s.getAttributes().get(AttributeKey.longKey("idempotency.attempt")))
            .containsExactly(1L, 2L);
    }

    @Test
    @DisplayName("O4: a delivery of a message another consumer instance is processing says requeued; one without a"
        + " traceparent starts under the broker client's current span")
    void requeuedAndUntraced() throws Exception {
        CountDownLatch entered = new CountDownLatch(1);
        consumer.process(message("m3", 0, false), m -> {
            entered.countDown();
            return new CompletableFuture<>(); // still running
        });
        assertThat(entered.await(5, TimeUnit.SECONDS)).isTrue();
        Span broker = openTelemetry.getTracer("broker").spanBuilder("receive").startSpan();
        try (var scope = broker.makeCurrent()) {
            assertThat(process(message("m3", 0, false), m -> CompletableFuture.completedFuture(null)))
                .isInstanceOf(Disposition.Retry.class);
        } finally {
            broker.end();
        }
        SpanData requeued = deliveries().get(0);
        assertThat(requeued.getAttributes().get(OUTCOME)).isEqualTo("requeued");
        assertThat(requeued.getAttributes().get(REASON)).contains("being processed elsewhere");
        assertThat(requeued.getParentSpanId()).isEqualTo(broker.getSpanContext().getSpanId());
    }

    @Test
    @DisplayName("O4: without an OpenTelemetry bean consumers have no tracing, and process as before")
    void withoutOpenTelemetry() {
        try (ApplicationContext plain = ApplicationContext.run()) {
            assertThat(plain.findBean(ConsumerTracing.class)).isEmpty();
            IdempotentConsumer untraced = plain.getBean(IdempotentConsumers.class).consumer(ConsumerSettings.of("ledger"));
            MessageHandler ok = m -> CompletableFuture.completedFuture(null);
            assertThat(untraced.process(message("m4", 0, true), ok).toCompletableFuture().join())
                .isEqualTo(new Disposition.Ack(DeliveryOutcome.PROCESSED));
        }
        assertThat(deliveries()).isEmpty();
    }

    @Factory
    @Requires(property = "spec.name", value = "ConsumerTracingTest")
    static class Tracing {
        @Bean(preDestroy = "close")
        @Singleton
        OpenTelemetrySdk openTelemetry() {
            // each test's context closes its SDK; the shared exporter must outlive it
            SpanExporter unclosed = new SpanExporter() {
                @Override
                public CompletableResultCode export(Collection<SpanData> spans) {
                    return EXPORTER.export(spans);
                }

                @Override
                public CompletableResultCode flush() {
                    return CompletableResultCode.ofSuccess();
                }

                @Override
                public CompletableResultCode shutdown() {
                    return CompletableResultCode.ofSuccess();
                }
            };
            return OpenTelemetrySdk.builder()
                .setTracerProvider(SdkTracerProvider.builder().addSpanProcessor(SimpleSpanProcessor.create(unclosed)).build())
                .build();
        }
    }
}
