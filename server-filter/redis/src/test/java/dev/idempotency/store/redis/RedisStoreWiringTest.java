package dev.idempotency.store.redis;

import dev.idempotency.testsupport.RedisServerProcess;
import dev.idempotency.testsupport.TestRedis;

import dev.idempotency.server.store.AcquireResult;
import dev.idempotency.server.store.IdempotencyStore;
import dev.idempotency.server.store.memory.InMemoryIdempotencyStore;
import io.lettuce.core.RedisClient;
import io.micronaut.context.ApplicationContext;
import io.micronaut.context.exceptions.BeanInstantiationException;
import org.junit.jupiter.api.DisplayName;
import org.junit.jupiter.api.Test;

import java.time.Duration;
import java.util.HashMap;
import java.util.Map;
import java.util.UUID;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/** S17: how the Redis store becomes the application's store, and its configuration. */
class RedisStoreWiringTest {

    private static ApplicationContext run(Map<String, Object> props) {
        Map<String, Object> all = new HashMap<>(props);
        all.putIfAbsent("spec.name", "RedisStoreWiringTest");
        return ApplicationContext.run(all);
    }

    @Test
    @DisplayName("S17: with the module present the Redis store replaces the in-memory store, configured from idempotency.store.redis.*")
    void replacesInMemoryStore() {
        String prefix = TestRedis.uniquePrefix("wiring");
        try (ApplicationContext ctx = run(Map.of("redis.uri", TestRedis.uri(),
            "idempotency.store.redis.key-prefix", prefix,
            "idempotency.store.redis.command-timeout", "750ms",
            "idempotency.store.redis.late-completion-window", "2h",
            "idempotency.store.redis.expiry-grace", "0s"))) {
            assertThat(ctx.getBean(IdempotencyStore.class)).isInstanceOf(RedisIdempotencyStore.class);
            // the filter injects IdempotencyStore: the Redis store is the only candidate of that type. (Core's
            // InMemoryStorePurger still asks for InMemoryIdempotencyStore by its own type, which @Replaces does
            // not filter, so an unused, empty in-memory store may exist beside it.)
            assertThat(ctx.getBeansOfType(IdempotencyStore.class)).singleElement()
                .isInstanceOf(RedisIdempotencyStore.class);
            RedisIdempotencyStoreConfiguration cfg = ctx.getBean(RedisIdempotencyStoreConfiguration.class);
            assertThat(cfg.getKeyPrefix()).isEqualTo(prefix);
            assertThat(cfg.getCommandTimeout()).isEqualTo(Duration.ofMillis(750));
            assertThat(cfg.getLateCompletionWindow()).isEqualTo(Duration.ofHours(2));
            assertThat(cfg.getExpiryGrace()).isZero();
            assertThat(cfg.getServer()).isEmpty();
            IdempotencyStore store = ctx.getBean(IdempotencyStore.class);
            assertThat(store.acquire(UUID.randomUUID().toString(), new byte[32], Duration.ofSeconds(30))
                .toCompletableFuture().join()).isInstanceOf(AcquireResult.Acquired.class);
        } finally {
            RedisClient c = RedisClient.create(TestRedis.uri());
            TestRedis.deleteKeys(c, prefix);
            c.shutdown();
        }
    }

    @Test
    @DisplayName("S17: idempotency.store.redis.enabled=false keeps the in-memory store")
    void disabled() {
        try (ApplicationContext ctx = run(Map.of("redis.uri", TestRedis.uri(), "idempotency.store.redis.enabled", false))) {
            assertThat(ctx.getBean(IdempotencyStore.class)).isInstanceOf(InMemoryIdempotencyStore.class);
        }
    }

    @Test
    @DisplayName("S17: idempotency.store.redis.server picks a named micronaut-redis server (redis.servers.<name>)")
    void namedServer() {
        String prefix = TestRedis.uniquePrefix("named");
        int closedPort = RedisServerProcess.freePort(false);
        try (ApplicationContext ctx = run(Map.of(
            "redis.uri", "redis://127.0.0.1:" + closedPort,
            "redis.servers.idem.uri", TestRedis.uri(),
            "idempotency.store.redis.server", "idem",
            "idempotency.store.redis.key-prefix", prefix))) {
            assertThat(ctx.getBean(IdempotencyStore.class).acquire(UUID.randomUUID().toString(), new byte[32],
                Duration.ofSeconds(30)).toCompletableFuture().join()).isInstanceOf(AcquireResult.Acquired.class);
        } finally {
            RedisClient c = RedisClient.create(TestRedis.uri());
            TestRedis.deleteKeys(c, prefix);
            c.shutdown();
        }
    }

    @Test
    @DisplayName("S17: a key prefix with braces fails at startup, naming the setting")
    void badPrefix() {
        assertThatThrownBy(() -> startAndGetStore(Map.of("idempotency.store.redis.key-prefix", "a{b}")))
            .hasStackTraceContaining("idempotency.store.redis.key-prefix");
        assertThatThrownBy(() -> startAndGetStore(Map.of("idempotency.store.redis.command-timeout", "0s")))
            .isInstanceOf(BeanInstantiationException.class)
            .hasStackTraceContaining("command-timeout");
    }

    private static void startAndGetStore(Map<String, Object> props) {
        Map<String, Object> all = new HashMap<>(props);
        all.put("redis.uri", TestRedis.uri());
        try (ApplicationContext ctx = run(all)) {
            ctx.getBean(IdempotencyStore.class);
        }
    }
}
