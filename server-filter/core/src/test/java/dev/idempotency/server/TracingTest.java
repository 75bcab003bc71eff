package dev.idempotency.server;

import io.micronaut.context.annotation.Bean;
import io.micronaut.context.annotation.Factory;
import io.micronaut.context.annotation.Property;
import io.micronaut.context.annotation.Requires;
import io.micronaut.context.event.ApplicationEventListener;
import io.micronaut.http.HttpRequest;
import io.micronaut.http.HttpResponse;
import io.micronaut.http.annotation.Body;
import io.micronaut.http.annotation.Controller;
import io.micronaut.http.annotation.Post;
import io.micronaut.http.client.HttpClient;
import io.micronaut.http.client.annotation.Client;
import io.micronaut.http.client.exceptions.HttpClientResponseException;
import io.micronaut.test.extensions.junit5.annotation.MicronautTest;
import io.opentelemetry.api.common.AttributeKey;
import io.opentelemetry.sdk.testing.exporter.InMemorySpanExporter;
import io.opentelemetry.sdk.trace.SpanProcessor;
import io.opentelemetry.sdk.trace.data.LinkData;
import io.opentelemetry.sdk.trace.data.SpanData;
import io.opentelemetry.sdk.trace.export.SimpleSpanProcessor;
import jakarta.inject.Inject;
import jakarta.inject.Singleton;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.DisplayName;
import org.junit.jupiter.api.Test;

import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.TimeUnit;
import java.util.function.BooleanSupplier;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.catchThrowableOfType;

/**
 * With Micronaut's OpenTelemetry tracing and the real SDK (its in-memory exporter), the request's
 * server span says what the filter did, and a replay's span links to the span that executed the
 * operation (CONTRACT O4); every outcome is also an {@link IdempotencyOutcomeEvent}.
 */
@MicronautTest
@Property(name = "spec.name", value = "TracingTest")
@Property(name = "idempotency.in-flight-wait", value = "0s")
class TracingTest {

    static final InMemorySpanExporter EXPORTER = InMemorySpanExporter.create();
    static final AttributeKey<String> OUTCOME = AttributeKey.stringKey("idempotency.outcome");
    static final AttributeKey<String> KEY_HASH = AttributeKey.stringKey("idempotency.key_hash");
    static final AttributeKey<String> ROUTE = AttributeKey.stringKey("idempotency.route");
    static final AttributeKey<String> STORE = AttributeKey.stringKey("idempotency.store");
    static final AttributeKey<String> ORIGINAL = AttributeKey.stringKey("idempotency.original_trace_id");
    static final AttributeKey<String> STEP_NAME = AttributeKey.stringKey("idempotency.step.name");
    static final AttributeKey<Boolean> STEP_RESUMED = AttributeKey.booleanKey("idempotency.step.resumed");

    @Inject
    @Client("/")
    HttpClient client;
    @Inject
    Outcomes outcomes;
    @Inject
    SwitchableStore store;

    @BeforeEach
    void reset() {
        EXPORTER.reset();
        outcomes.events.clear();
    }

    @Test
    @DisplayName("O4: executed, then replayed: the replay's span links to the executing span and names its trace")
    void replayLinksToTheExecution() {
        String key = UUID.randomUUID().toString();
        post("/traced/pay", key, Map.of("amount", 10));
        SpanData executed = serverSpan("executed");
        post("/traced/pay", key, Map.of("amount", 10));
        SpanData replayed = serverSpan("replayed");

        assertThat(executed.getAttributes().get(ROUTE)).isEqualTo("POST /traced/pay");
        // a store of the application's own is named by its class; memory, redis and postgres by their type
        assertThat(executed.getAttributes().get(STORE)).isEqualTo("SwitchableStore");
        assertThat(executed.getAttributes().get(KEY_HASH)).hasSize(12).isEqualTo(replayed.getAttributes().get(KEY_HASH))
            .doesNotContain(key.substring(0, 8));
        assertThat(replayed.getTraceId()).isNotEqualTo(executed.getTraceId());
        assertThat(replayed.getLinks()).extracting(LinkData::getSpanContext)
            .anySatisfy(link -> {
                assertThat(link.getTraceId()).isEqualTo(executed.getTraceId());
                assertThat(link.getSpanId()).isEqualTo(executed.getSpanId());
            });
        assertThat(replayed.getLinks()).extracting(l -> l.getAttributes().get(AttributeKey.stringKey("idempotency.link")))
            .contains("replay-of");
        assertThat(replayed.getAttributes().get(ORIGINAL)).isEqualTo(executed.getTraceId());
        assertThat(outcomes.events).extracting(IdempotencyOutcomeEvent::outcome)
            .containsExactly(IdempotencyOutcome.EXECUTED, IdempotencyOutcome.REPLAYED);
        // the store calls are children of the request's span
        assertThat(children(executed)).extracting(SpanData::getName)
            .containsExactlyInAnyOrder("idempotency.acquire", "idempotency.complete");
        assertThat(children(replayed)).extracting(SpanData::getName).containsExactly("idempotency.acquire");
        assertThat(outcomes.events.get(0).executed()).isTrue();
        assertThat(outcomes.events.get(1).executed()).isFalse();
    }

    @Test
    @DisplayName("O4: mismatch and rejected are on the request's span and published as events")
    void mismatchAndRejected() {
        String key = UUID.randomUUID().toString();
        post("/traced/pay", key, Map.of("amount", 10));
        assertThat(status(() -> post("/traced/pay", key, Map.of("amount", 11)))).isEqualTo(422);
        assertThat(serverSpan("mismatch").getAttributes().get(KEY_HASH)).hasSize(12);
        assertThat(status(() -> post("/traced/pay", "k".repeat(300), Map.of("amount", 10)))).isEqualTo(400);
        SpanData rejected = serverSpan("rejected");
        assertThat(rejected.getAttributes().get(KEY_HASH)).isNull();
        assertThat(rejected.getAttributes().get(ROUTE)).isEqualTo("POST /traced/pay");
        assertThat(outcomes.events).extracting(IdempotencyOutcomeEvent::outcome).containsExactly(
            IdempotencyOutcome.EXECUTED, IdempotencyOutcome.MISMATCH, IdempotencyOutcome.REJECTED);
    }

    @Test
    @DisplayName("O4: a 409 while the original runs says conflict on its span and links to the run in progress")
    void conflict() throws Exception {
        String key = UUID.randomUUID().toString();
        CompletableFuture<Void> first = CompletableFuture.runAsync(() -> post("/traced/slow", key, Map.of()));
        until(() -> Api.slowStarted.get() != null);
        SpanData conflict;
        try {
            assertThat(status(() -> post("/traced/slow", key, Map.of()))).isEqualTo(409);
            conflict = serverSpan("conflict");
            assertThat(conflict.getAttributes().get(ROUTE)).isEqualTo("POST /traced/slow");
        } finally {
            Api.slowStarted.get().complete("done");
        }
        first.get(10, TimeUnit.SECONDS);
        SpanData running = serverSpan("executed");
        assertThat(conflict.getLinks()).singleElement().satisfies(link -> {
            assertThat(link.getSpanContext().getTraceId()).isEqualTo(running.getTraceId());
            assertThat(link.getSpanContext().getSpanId()).isEqualTo(running.getSpanId());
            assertThat(link.getAttributes().get(AttributeKey.stringKey("idempotency.link"))).isEqualTo("in-progress");
        });
        assertThat(conflict.getAttributes().get(ORIGINAL)).isEqualTo(running.getTraceId());
    }

    @Test
    @DisplayName("O4: an execution that gets a durable step back from a released one says resumed; each step is a span that says ran or resumed")
    void resumed() {
        String key = UUID.randomUUID().toString();
        assertThat(status(() -> client.toBlocking().exchange(HttpRequest.POST("/traced/steps", Map.of())
            .header("Idempotency-Key", key).header("X-Fail", "true"), String.class))).isEqualTo(500);
        SpanData failed = serverSpan("executed");
        post("/traced/steps", key, Map.of());
        SpanData resumed = serverSpan("resumed");
        assertThat(resumed.getAttributes().get(KEY_HASH)).isEqualTo(failed.getAttributes().get(KEY_HASH));
        // each durable step is a child span that says whether it ran or came back from the record
        SpanData ran = step(failed);
        SpanData back = step(resumed);
        assertThat(ran.getAttributes().get(STEP_NAME)).isEqualTo("charge");
        assertThat(ran.getAttributes().get(STEP_RESUMED)).isFalse();
        assertThat(back.getAttributes().get(STEP_NAME)).isEqualTo("charge");
        assertThat(back.getAttributes().get(STEP_RESUMED)).isTrue();
        assertThat(outcomes.events).extracting(IdempotencyOutcomeEvent::outcome)
            .containsExactly(IdempotencyOutcome.EXECUTED, IdempotencyOutcome.RESUMED);
        assertThat(outcomes.events.get(1).executed()).isTrue();
    }

    @Test
    @DisplayName("O4: a store that cannot be reached: store-error on the span, the acquire's child span an error")
    void storeError() {
        String key = UUID.randomUUID().toString();
        store.down = true;
        try {
            assertThat(status(() -> post("/traced/pay", key, Map.of("amount", 1)))).isEqualTo(503);
        } finally {
            store.down = false;
        }
        SpanData span = serverSpan("store-error");
        assertThat(children(span)).singleElement().satisfies(acquire -> {
            assertThat(acquire.getName()).isEqualTo("idempotency.acquire");
            assertThat(acquire.getStatus().getStatusCode()).isEqualTo(io.opentelemetry.api.trace.StatusCode.ERROR);
        });
        assertThat(outcomes.events).extracting(IdempotencyOutcomeEvent::outcome)
            .containsExactly(IdempotencyOutcome.STORE_ERROR);
    }

    private void post(String path, String key, Map<String, Object> body) {
        HttpResponse<String> r = client.toBlocking().exchange(HttpRequest.POST(path, body).header("Idempotency-Key", key),
            String.class);
        assertThat(r.code()).isBetween(200, 299);
    }

    private static int status(Runnable call) {
        return catchThrowableOfType(HttpClientResponseException.class, call::run).code();
    }

    /** The one server span (of the filter's requests) with {@code outcome}, once exported. */
    private static SpanData serverSpan(String outcome) {
        until(() -> EXPORTER.getFinishedSpanItems().stream()
            .anyMatch(s -> outcome.equals(s.getAttributes().get(OUTCOME))));
        List<SpanData> found = EXPORTER.getFinishedSpanItems().stream()
            .filter(s -> outcome.equals(s.getAttributes().get(OUTCOME))).toList();
        assertThat(found).as("server spans with outcome %s", outcome).hasSize(1);
        return found.get(0);
    }

    private static SpanData step(SpanData request) {
        until(() -> children(request).stream().anyMatch(s -> s.getName().equals("idempotency.step")));
        return children(request).stream().filter(s -> s.getName().equals("idempotency.step")).findFirst().orElseThrow();
    }

    private static List<SpanData> children(SpanData parent) {
        return EXPORTER.getFinishedSpanItems().stream()
            .filter(s -> s.getParentSpanId().equals(parent.getSpanId()) && s.getName().startsWith("idempotency.")).toList();
    }

    private static void until(BooleanSupplier condition) {
        long end = System.nanoTime() + Duration.ofSeconds(10).toNanos();
        while (!condition.getAsBoolean()) {
            assertThat(System.nanoTime()).as("waited 10 s").isLessThan(end);
            try {
                Thread.sleep(10);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                throw new AssertionError(e);
            }
        }
    }

    @Factory
    @Requires(property = "spec.name", value = "TracingTest")
    static class Exporter {
        @Bean
        @Singleton
        SpanProcessor inMemory() {
            return SimpleSpanProcessor.create(EXPORTER);
        }
    }

    /** The in-memory store behind a switch that fails acquires like an unreachable server. */
    @Singleton
    @io.micronaut.context.annotation.Replaces(dev.idempotency.server.store.memory.InMemoryIdempotencyStore.class)
    @Requires(property = "spec.name", value = "TracingTest")
    static class SwitchableStore extends InMemoryBackedStore {
        volatile boolean down;

        SwitchableStore(java.time.Clock clock) {
            super(new dev.idempotency.server.store.memory.InMemoryIdempotencyStore(clock, 1000));
        }

        @Override
        public java.util.concurrent.CompletionStage<dev.idempotency.server.store.AcquireResult> acquire(String storeKey,
                byte[] fingerprint, Duration lease, String traceparent) {
            return down ? CompletableFuture.failedFuture(
                new dev.idempotency.server.store.IdempotencyStoreException("connection refused (simulated outage)"))
                : delegate.acquire(storeKey, fingerprint, lease, traceparent);
        }
    }

    @Singleton
    @Requires(property = "spec.name", value = "TracingTest")
    static class Outcomes implements ApplicationEventListener<IdempotencyOutcomeEvent> {
        final List<IdempotencyOutcomeEvent> events = new CopyOnWriteArrayList<>();

        @Override
        public void onApplicationEvent(IdempotencyOutcomeEvent event) {
            events.add(event);
        }
    }

    @Requires(property = "spec.name", value = "TracingTest")
    @Controller("/traced")
    @Idempotent
    static class Api {
        static final java.util.concurrent.atomic.AtomicReference<CompletableFuture<String>> slowStarted =
            new java.util.concurrent.atomic.AtomicReference<>();

        @Post("/pay")
        Map<String, Object> pay(@Body Map<String, Object> body) {
            return Map.of("paid", body.getOrDefault("amount", 0));
        }

        final java.util.concurrent.atomic.AtomicInteger stepRuns = new java.util.concurrent.atomic.AtomicInteger();

        /** Records a step, then fails (5xx: released, the step kept) unless asked not to. */
        @Post("/steps")
        @io.micronaut.scheduling.annotation.ExecuteOn(io.micronaut.scheduling.TaskExecutors.BLOCKING)
        HttpResponse<String> steps(@io.micronaut.http.annotation.Header(value = "X-Fail", defaultValue = "false") boolean fail) {
            String charge = IdempotentOperation.required().step("charge", String.class,
                () -> "charge-" + stepRuns.incrementAndGet());
            return fail ? HttpResponse.serverError(charge) : HttpResponse.ok(charge);
        }

        @Post("/slow")
        CompletableFuture<String> slow(@Body Map<String, Object> body) {
            CompletableFuture<String> f = new CompletableFuture<>();
            slowStarted.set(f);
            return f;
        }
    }
}
