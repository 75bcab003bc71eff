package dev.idempotency.interop;

import dev.idempotency.server.Idempotent;
import dev.idempotency.server.IdempotencyOutcome;
import dev.idempotency.server.IdempotencyOutcomeEvent;
import dev.idempotency.testsupport.Http;
import dev.idempotency.testsupport.Stores;
import io.micronaut.context.ApplicationContext;
import io.micronaut.context.annotation.Requires;
import io.micronaut.context.event.ApplicationEventListener;
import io.micronaut.http.annotation.Body;
import io.micronaut.http.annotation.Controller;
import io.micronaut.http.annotation.Post;
import io.micronaut.runtime.server.EmbeddedServer;
import jakarta.inject.Singleton;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;

import java.net.http.HttpResponse;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.atomic.AtomicInteger;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.catchThrowable;

/**
 * CONTRACT O4's "absent, nothing changes": this module's tests have no OpenTelemetry on the class
 * path (every tracing dependency of the filter, the client and the consumers is optional). On every
 * store the application starts, defines no tracing bean, executes, answers 409 and replays as
 * before, its outcome events published all the same.
 */
class WithoutTracingTest {

    static final String SPEC = "WithoutTracingTest";
    static final AtomicInteger RUNS = new AtomicInteger();

    @AfterEach
    void cleanUp() {
        Stores.removeCreated();
    }

    @ParameterizedTest(name = "O4: {0}: without OpenTelemetry the application starts, loads no tracing bean and behaves as before")
    @EnumSource(Stores.class)
    void noOpenTelemetryNoChange(Stores store) throws Exception {
        assertThat(catchThrowable(() -> Class.forName("io.opentelemetry.api.trace.Span")))
            .isInstanceOf(ClassNotFoundException.class);
        Map<String, Object> p = new HashMap<>(store.properties());
        p.put("spec.name", SPEC);
        p.put("micronaut.server.port", -1);
        try (ApplicationContext app = ApplicationContext.run(p)) {
            assertThat(app.getBeanDefinitions(Class.forName(
                "dev.idempotency.server.internal.telemetry.RequestTracing"))).isEmpty();
            Outcomes outcomes = app.getBean(Outcomes.class);
            Http http = new Http(app.getBean(EmbeddedServer.class).start().getURI());
            String key = "\"" + UUID.randomUUID() + "\"";
            int before = RUNS.get();
            HttpResponse<byte[]> first = http.postJson("/untraced/orders", key, "{\"sku\":\"a\"}");
            HttpResponse<byte[]> second = http.postJson("/untraced/orders", key, "{\"sku\":\"a\"}");
            HttpResponse<byte[]> other = http.postJson("/untraced/orders", key, "{\"sku\":\"b\"}");
            assertThat(first.statusCode()).isEqualTo(200);
            assertThat(second.headers().firstValue("Idempotent-Replayed")).contains("true");
            assertThat(second.body()).isEqualTo(first.body());
            assertThat(other.statusCode()).isEqualTo(422);
            assertThat(RUNS.get()).isEqualTo(before + 1);
            assertThat(outcomes.seen).containsExactly(IdempotencyOutcome.EXECUTED, IdempotencyOutcome.REPLAYED,
                IdempotencyOutcome.MISMATCH);
        }
    }

    @Requires(property = "spec.name", value = SPEC)
    @Controller("/untraced")
    static class Orders {
        @Post("/orders")
        @Idempotent
        Map<String, Object> order(@Body Map<String, Object> body) {
            return Map.of("order", RUNS.incrementAndGet(), "sku", body.get("sku"));
        }
    }

    @Singleton
    @Requires(property = "spec.name", value = SPEC)
    static class Outcomes implements ApplicationEventListener<IdempotencyOutcomeEvent> {
        final List<IdempotencyOutcome> seen = new CopyOnWriteArrayList<>();

        @Override
        public void onApplicationEvent(IdempotencyOutcomeEvent event) {
            seen.add(event.outcome());
        }
    }
}
