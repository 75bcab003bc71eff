package dev.idempotency.store.redis;

import dev.idempotency.server.IdempotencyOutcome;
import dev.idempotency.server.IdempotencyOutcomeEvent;
import dev.idempotency.testsupport.Http;
import dev.idempotency.testsupport.TestRedis;
import io.lettuce.core.RedisClient;
import io.micronaut.context.ApplicationContext;
import io.micronaut.context.event.ApplicationEventListener;
import io.micronaut.runtime.server.EmbeddedServer;
import org.junit.jupiter.api.DisplayName;
import org.junit.jupiter.api.Test;

import java.net.URI;
import java.net.http.HttpResponse;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import java.util.concurrent.CopyOnWriteArrayList;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.catchThrowable;

/**
 * CONTRACT O4's "absent, nothing changes": this module's tests have no OpenTelemetry on the class
 * path (the filter's tracing dependency is optional); the application starts, defines no tracing
 * bean, and executes and replays as before, its outcome events published all the same.
 */
class WithoutTracingTest {

    @Test
    @DisplayName("O4: without OpenTelemetry on the class path the application starts, loads no tracing bean and behaves as before")
    void noOpenTelemetryNoChange() throws Exception {
        assertThat(catchThrowable(() -> Class.forName("io.opentelemetry.api.trace.Span")))
            .isInstanceOf(ClassNotFoundException.class);
        String prefix = TestRedis.uniquePrefix("no-tracing");
        List<IdempotencyOutcome> outcomes = new CopyOnWriteArrayList<>();
        try (ApplicationContext app = ApplicationContext.run(Map.of("spec.name", TestApi.SPEC,
            "micronaut.server.port", -1, "redis.uri", TestRedis.uri(), "idempotency.store.redis.key-prefix", prefix))) {
            app.registerSingleton(ApplicationEventListener.class, (ApplicationEventListener<Object>) e -> {
                if (e instanceof IdempotencyOutcomeEvent event) {
                    outcomes.add(event.outcome());
                }
            });
            assertThat(app.getBeanDefinitions(Class.forName(
                "dev.idempotency.server.internal.telemetry.RequestTracing"))).isEmpty();
            URI base = app.getBean(EmbeddedServer.class).start().getURI();
            String test = "no-tracing-" + UUID.randomUUID();
            String key = "\"" + UUID.randomUUID() + "\"";
            HttpResponse<byte[]> first = new Http(base).postJson("/redis-api/" + test, key, "{}");
            HttpResponse<byte[]> second = new Http(base).postJson("/redis-api/" + test, key, "{}");
            assertThat(first.statusCode()).isEqualTo(200);
            assertThat(second.headers().firstValue("Idempotent-Replayed")).contains("true");
            assertThat(second.body()).isEqualTo(first.body());
            assertThat(TestApi.executions(test)).isEqualTo(1);
            assertThat(outcomes).containsExactly(IdempotencyOutcome.EXECUTED, IdempotencyOutcome.REPLAYED);
        } finally {
            RedisClient client = RedisClient.create(TestRedis.uri());
            try {
                TestRedis.deleteKeys(client, prefix);
            } finally {
                client.shutdown();
            }
        }
    }
}
