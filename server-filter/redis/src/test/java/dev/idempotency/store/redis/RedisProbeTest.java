package dev.idempotency.store.redis;

import dev.idempotency.server.store.IdempotencyStore;
import dev.idempotency.server.store.IdempotencyStoreException;
import dev.idempotency.testsupport.RedisServerProcess;
import dev.idempotency.testsupport.TestRedis;
import io.micronaut.context.ApplicationContext;
import org.junit.jupiter.api.DisplayName;
import org.junit.jupiter.api.Test;

import java.util.Map;
import java.util.concurrent.CompletionException;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/** O2: the Redis store's probe, which the /health indicator reports: one PING. */
class RedisProbeTest {

    @Test
    @DisplayName("O2: a reachable Redis answers the probe with PONG")
    void reachable() {
        try (ApplicationContext ctx = ApplicationContext.run(Map.of("redis.uri", TestRedis.uri()))) {
            IdempotencyStore store = ctx.getBean(IdempotencyStore.class);
            assertThat(store.probe().toCompletableFuture().join()).containsEntry("ping", "PONG");
        }
    }

    @Test
    @DisplayName("O2: an unreachable Redis fails the probe with an IdempotencyStoreException")
    void unreachable() {
        int closed = RedisServerProcess.freePort(false);
        try (ApplicationContext ctx = ApplicationContext.run(Map.of("redis.uri", "redis://127.0.0.1:" + closed,
            "idempotency.store.redis.command-timeout", "300ms",
            "idempotency.store.redis.eviction-policy-check", "off"))) {
            IdempotencyStore store = ctx.getBean(IdempotencyStore.class);
            assertThatThrownBy(() -> store.probe().toCompletableFuture().join())
                .isInstanceOf(CompletionException.class).hasCauseInstanceOf(IdempotencyStoreException.class);
        }
    }
}
