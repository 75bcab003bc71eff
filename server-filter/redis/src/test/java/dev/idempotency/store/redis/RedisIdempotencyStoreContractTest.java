package dev.idempotency.store.redis;

import dev.idempotency.testsupport.RedisServerProcess;
import dev.idempotency.testsupport.TestRedis;

import dev.idempotency.server.store.AcquireResult;
import dev.idempotency.server.store.IdempotencyStore;
import dev.idempotency.store.tck.IdempotencyStoreContractTest;
import dev.idempotency.testsupport.MutableClock;
import io.lettuce.core.RedisClient;
import io.lettuce.core.RedisURI;
import io.lettuce.core.api.StatefulRedisConnection;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.DisplayName;
import org.junit.jupiter.api.Test;

import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * The whole store contract suite (S17) against standalone Redis (the shared test Redis, see
 * {@link TestRedis}), plus the Redis-specific layout and TTL rules of {@link RedisIdempotencyStore}.
 */
class RedisIdempotencyStoreContractTest extends IdempotencyStoreContractTest {

    static RedisClient client;
    static String prefix;
    RedisIdempotencyStore redisStore;

    @BeforeAll
    static void connect() {
        client = RedisClient.create(TestRedis.uri());
        prefix = RedisKeys.uniquePrefix("contract");
    }

    @AfterAll
    static void cleanUp() {
        RedisKeys.deleteAll(client, prefix);
        client.shutdown();
    }

    static RedisIdempotencyStoreConfigurationProperties config(String prefix) {
        RedisIdempotencyStoreConfigurationProperties c = new RedisIdempotencyStoreConfigurationProperties();
        c.setKeyPrefix(prefix);
        return c;
    }

    @Override
    protected IdempotencyStore store(MutableClock clock) {
        redisStore = new RedisIdempotencyStore(client, List.of(RedisURI.create(TestRedis.uri())), clock, config(prefix));
        return redisStore;
    }

    @AfterEach
    void closeStore() {
        redisStore.close();
    }

    private long acquire(String key) {
        return ((AcquireResult.Acquired) acquire(key, fingerprint("a"), LEASE)).fencingToken();
    }

    @Test
    @DisplayName("S17: record layout is the documented hash; both keys share one hash tag")
    void layoutAsDocumented() {
        String key = newKey();
        long token = acquire(key);
        try (StatefulRedisConnection<String, String> c = client.connect()) {
            String recordKey = prefix + "{" + key + "}";
            assertThat(redisStore.recordKeyText(key)).isEqualTo(recordKey);
            assertThat(redisStore.tokenKeyText(key)).isEqualTo(recordKey + ":token");
            Map<String, String> inProgress = c.sync().hgetall(recordKey);
            assertThat(inProgress).containsOnlyKeys("state", "fp", "token", "deadline")
                .containsEntry("state", "P")
                .containsEntry("token", Long.toString(token))
                .containsEntry("deadline", Long.toString(clock.millis() + LEASE.toMillis()));
            assertThat(c.sync().get(recordKey + ":token")).isEqualTo(Long.toString(token));

            Map<String, List<String>> headers = new LinkedHashMap<>();
            headers.put("Content-Type", List.of("text/plain"));
            complete(key, token, new dev.idempotency.server.store.StoredResponse(201, headers,
                "hé".getBytes(StandardCharsets.UTF_8), false), RETENTION);
            Map<String, String> completed = c.sync().hgetall(recordKey);
            assertThat(completed).containsOnlyKeys("state", "fp", "token", "deadline", "status", "omitted", "headers", "body")
                .containsEntry("state", "C")
                .containsEntry("status", "201")
                .containsEntry("omitted", "0")
                .containsEntry("body", "hé")
                .containsEntry("deadline", Long.toString(clock.millis() + RETENTION.toMillis()));
        }
    }

    @Test
    @DisplayName("S12/S16: TTLs: in progress = lease + late-completion window; completed = retention + grace")
    void ttls() {
        String key = newKey();
        long token = acquire(key);
        try (StatefulRedisConnection<String, String> c = client.connect()) {
            String recordKey = prefix + "{" + key + "}";
            long inProgressTtl = LEASE.plus(RedisIdempotencyStoreConfigurationProperties.DEFAULT_LATE_COMPLETION_WINDOW).toMillis();
            assertThat(c.sync().pttl(recordKey)).isBetween(inProgressTtl - 5_000, inProgressTtl);
            assertThat(c.sync().pttl(recordKey + ":token")).isBetween(inProgressTtl - 5_000, inProgressTtl);

            Duration retention = Duration.ofMinutes(10);
            complete(key, token, response(200, "ok"), retention);
            long completedTtl = retention.plus(RedisIdempotencyStoreConfigurationProperties.DEFAULT_EXPIRY_GRACE).toMillis();
            assertThat(c.sync().pttl(recordKey)).isBetween(completedTtl - 5_000, completedTtl);
            // the counter never expires before a record it numbered
            assertThat(c.sync().pttl(recordKey + ":token")).isGreaterThanOrEqualTo(c.sync().pttl(recordKey));
        }
    }

    @Test
    @DisplayName("S16: with the real clock Redis deletes a completed record once retention + grace has passed")
    void redisCollectsExpiredRecords() {
        RedisIdempotencyStoreConfigurationProperties cfg = config(prefix);
        cfg.setExpiryGrace(Duration.ZERO);
        try (RedisIdempotencyStore real = new RedisIdempotencyStore(client, List.of(RedisURI.create(TestRedis.uri())),
                java.time.Clock.systemUTC(), cfg);
             StatefulRedisConnection<String, String> c = client.connect()) {
            String key = newKey();
            long token = ((AcquireResult.Acquired) join(real.acquire(key, fingerprint("a"), LEASE))).fencingToken();
            assertThat(join(real.complete(key, token, response(200, "ok"), Duration.ofMillis(300)))).isTrue();
            long deadline = System.nanoTime() + Duration.ofSeconds(10).toNanos();
            while (c.sync().exists(prefix + "{" + key + "}") == 1 && System.nanoTime() < deadline) {
                RedisServerProcess.sleep(50);
            }
            assertThat(c.sync().exists(prefix + "{" + key + "}")).isZero();
            assertThat(join(real.acquire(key, fingerprint("b"), LEASE))).isInstanceOf(AcquireResult.Acquired.class);
        }
    }

    @Test
    @DisplayName("S12: a late completion still lands long after the lease (far-ahead test clock), nothing expired early")
    void lateCompletionAfterLongPause() {
        String key = newKey();
        long token = acquire(key);
        clock.advance(Duration.ofHours(6));
        assertThat(complete(key, token, response(200, "late"), RETENTION)).isTrue();
        clock.advance(RETENTION.minusMinutes(1));
        assertThat(acquire(key, fingerprint("a"), LEASE)).isEqualTo(new AcquireResult.Replay(response(200, "late")));
    }

    @Test
    @DisplayName("S12: fencing tokens keep increasing after the token counter is lost (seeded from the clock)")
    void tokensIncreaseAfterCounterLoss() {
        String key = newKey();
        long first = acquire(key);
        assertThat(release(key, first)).isTrue();
        try (StatefulRedisConnection<String, String> c = client.connect()) {
            c.sync().del(prefix + "{" + key + "}:token");
        }
        clock.advance(Duration.ofSeconds(1));
        assertThat(acquire(key)).isGreaterThan(first);
    }
}
