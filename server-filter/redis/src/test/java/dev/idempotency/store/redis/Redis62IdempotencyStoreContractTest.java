package dev.idempotency.store.redis;

import dev.idempotency.server.store.AcquireResult;
import dev.idempotency.server.store.IdempotencyStore;
import dev.idempotency.store.tck.IdempotencyStoreContractTest;
import dev.idempotency.testsupport.MutableClock;
import dev.idempotency.testsupport.RedisServerProcess;
import io.lettuce.core.RedisClient;
import io.lettuce.core.RedisURI;
import io.lettuce.core.api.StatefulRedisConnection;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.DisplayName;
import org.junit.jupiter.api.Test;

import java.util.List;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * The whole store contract suite (S17) against Redis 6.2, the binary inside the embedded-redis
 * jar: there {@code SET} cannot combine {@code NX} and {@code GET}, so the store learns from the
 * first refusal to acquire through its script instead.
 */
class Redis62IdempotencyStoreContractTest extends IdempotencyStoreContractTest {

    static RedisServerProcess server;
    static RedisClient client;
    RedisIdempotencyStore redisStore;

    @BeforeAll
    static void startRedis62() {
        server = RedisServerProcess.start(RedisServerProcess.jarBinary(), RedisServerProcess.freePort(false));
        client = RedisClient.create(server.uri());
    }

    @AfterAll
    static void stopRedis62() {
        client.shutdown();
        server.close();
    }

    @Override
    protected IdempotencyStore store(MutableClock clock) {
        redisStore = new RedisIdempotencyStore(client, List.of(RedisURI.create(server.uri())), clock,
            RedisIdempotencyStoreContractTest.config("idempotency:"));
        return redisStore;
    }

    @AfterEach
    void closeStore() {
        redisStore.close();
    }

    @Test
    @DisplayName("S17: the server really is a Redis before 7.0, and acquire works on it")
    void runsOnRedisBefore7() {
        try (StatefulRedisConnection<String, String> c = client.connect()) {
            assertThat(c.sync().info("server")).contains("redis_version:6.");
        }
        assertThat(acquire(newKey(), fingerprint("a"), LEASE)).isInstanceOf(AcquireResult.Acquired.class);
    }
}
