package dev.idempotency.store.redis;

import dev.idempotency.testsupport.Http;

import dev.idempotency.testsupport.RedisServerProcess;

import dev.idempotency.server.store.IdempotencyStore;
import io.micronaut.context.ApplicationContext;
import io.micronaut.runtime.server.EmbeddedServer;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.DisplayName;
import org.junit.jupiter.api.Test;

import java.net.URI;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.util.Map;
import java.util.UUID;
import java.util.concurrent.TimeUnit;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * S19 for real: the application's Redis is a redis-server this test started on its own port
 * (never the shared one), with {@code appendonly yes} and {@code appendfsync always} in its own
 * directory, so every completed record is on disk before the reply. The test kills it (SIGKILL,
 * no shutdown save), checks the filter fails closed, then starts it again on the same port and
 * directory: Redis reloads the AOF, Lettuce reconnects by itself, and the records stored before
 * the outage replay.
 */
class RedisOutageTest {

    RedisServerProcess redis;
    ApplicationContext app;
    URI base;

    @BeforeEach
    void start() {
        redis = RedisServerProcess.start("--appendonly", "yes", "--appendfsync", "always");
        app = ApplicationContext.run(Map.of(
            "spec.name", TestApi.SPEC,
            "micronaut.server.port", -1,
            "redis.uri", redis.uri(),
            "idempotency.store.redis.command-timeout", "500ms"));
        EmbeddedServer server = app.getBean(EmbeddedServer.class).start();
        base = server.getURI();
    }

    @AfterEach
    void stop() {
        if (app != null) {
            app.close();
        }
        if (redis != null) {
            redis.close();
        }
    }

    private static String key() {
        return "\"" + UUID.randomUUID() + "\"";
    }

    @Test
    @DisplayName("S19: Redis killed -> 503 problem with Retry-After, handler not run; restarted on the same port -> "
        + "service resumes by itself and records stored before the outage replay")
    void redisOutage() {
        assertThat(app.getBean(IdempotencyStore.class)).isInstanceOf(RedisIdempotencyStore.class);
        String test = "outage-" + UUID.randomUUID();
        String path = "/redis-api/" + test;
        String before = key();
        HttpResponse<byte[]> stored = new Http(base).postJson(path, before, "{\"a\":1}");
        assertThat(stored.statusCode()).isEqualTo(200);
        assertThat(TestApi.executions(test)).isEqualTo(1);

        redis.kill();
        String during = key();
        HttpResponse<byte[]> down = new Http(base).postJson(path, during, "{\"a\":2}");
        assertThat(down.statusCode()).isEqualTo(503);
        assertThat(down.headers().firstValue("Content-Type")).hasValue("application/problem+json");
        assertThat(down.headers().firstValue("Retry-After")).isPresent();
        assertThat(new String(down.body(), StandardCharsets.UTF_8)).contains("\"code\":\"idempotency-store-unavailable\"");
        assertThat(new Http(base).postJson(path, before, "{\"a\":1}").statusCode()).isEqualTo(503);
        assertThat(TestApi.executions(test)).isEqualTo(1);

        redis.restart();
        HttpResponse<byte[]> replay = null;
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(60);
        while (System.nanoTime() < deadline) {
            replay = new Http(base).postJson(path, before, "{\"a\":1}");
            if (replay.statusCode() != 503) {
                break;
            }
            RedisServerProcess.sleep(200);
        }
        assertThat(replay.statusCode()).isEqualTo(200);
        assertThat(replay.headers().firstValue("Idempotent-Replayed")).hasValue("true");
        assertThat(replay.body()).isEqualTo(stored.body());

        // the key refused during the outage left no lock behind: it runs now, once
        HttpResponse<byte[]> after = new Http(base).postJson(path, during, "{\"a\":2}");
        assertThat(after.statusCode()).isEqualTo(200);
        assertThat(after.headers().firstValue("Idempotent-Replayed")).isEmpty();
        assertThat(TestApi.executions(test)).isEqualTo(2);
    }
}
