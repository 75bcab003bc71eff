package dev.idempotency.store.tck;

import io.micronaut.context.annotation.Bean;
import io.micronaut.context.annotation.Factory;
import io.micronaut.context.annotation.Requires;
import io.opentelemetry.api.common.AttributeKey;
import io.opentelemetry.sdk.common.CompletableResultCode;
import io.opentelemetry.sdk.testing.exporter.InMemorySpanExporter;
import io.opentelemetry.sdk.trace.SpanProcessor;
import io.opentelemetry.sdk.trace.data.SpanData;
import io.opentelemetry.sdk.trace.export.SimpleSpanProcessor;
import io.opentelemetry.sdk.trace.export.SpanExporter;
import jakarta.inject.Singleton;

import java.util.Collection;
import java.util.List;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * The suites' tracing (CONTRACT O4): Micronaut's OpenTelemetry, whose SDK exports every ended
 * span to one in-memory exporter that every instance of a suite shares, so a test sees the spans
 * of two instances side by side and checks their links.
 */
final class TckTracing {

    static final InMemorySpanExporter EXPORTER = InMemorySpanExporter.create();
    static final AttributeKey<String> OUTCOME = AttributeKey.stringKey("idempotency.outcome");
    static final AttributeKey<String> STORE = AttributeKey.stringKey("idempotency.store");
    static final AttributeKey<String> ORIGINAL = AttributeKey.stringKey("idempotency.original_trace_id");
    static final AttributeKey<String> LINK = AttributeKey.stringKey("idempotency.link");

    private TckTracing() {
    }

    /** @return the server spans whose {@code idempotency.outcome} is {@code outcome}, waiting up to 10 s for one */
    static List<SpanData> spans(String outcome) {
        long end = System.nanoTime() + 10_000_000_000L;
        while (true) {
            List<SpanData> found = EXPORTER.getFinishedSpanItems().stream()
                .filter(s -> outcome.equals(s.getAttributes().get(OUTCOME))).toList();
            if (!found.isEmpty()) {
                return found;
            }
            assertThat(System.nanoTime()).as("a span with outcome %s within 10 s", outcome).isLessThan(end);
            try {
                Thread.sleep(10);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                throw new AssertionError(e);
            }
        }
    }

    /** @return the one server span with {@code outcome} */
    static SpanData span(String outcome) {
        List<SpanData> found = spans(outcome);
        assertThat(found).as("server spans with outcome %s", outcome).hasSize(1);
        return found.get(0);
    }

    /** Checks that {@code from} links to {@code to} with {@code reason} and names its trace. */
    static void assertLinked(SpanData from, SpanData to, String reason) {
        assertThat(from.getLinks()).as("the links of the %s span", from.getAttributes().get(OUTCOME)).singleElement()
            .satisfies(link -> {
                assertThat(link.getSpanContext().getTraceId()).isEqualTo(to.getTraceId());
                assertThat(link.getSpanContext().getSpanId()).isEqualTo(to.getSpanId());
                assertThat(link.getAttributes().get(LINK)).isEqualTo(reason);
            });
        assertThat(from.getAttributes().get(ORIGINAL)).isEqualTo(to.getTraceId());
    }

    /** The exporter, on every suite's instances. */
    @Factory
    @Requires(property = "spec.name", pattern = "RollingRestartSuite|NonBlockingFilterSuite")
    static class Exporter {
        @Bean
        @Singleton
        SpanProcessor inMemory() {
            // every instance's SDK shuts its processor down when the instance stops; the shared exporter stays open
            return SimpleSpanProcessor.create(new SpanExporter() {
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
            });
        }
    }
}
