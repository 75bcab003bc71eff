package dev.idempotency.store.redis;

import dev.idempotency.store.tck.RollingRestartSuite;
import dev.idempotency.testsupport.TestRedis;
import org.junit.jupiter.api.AfterAll;

import java.util.Map;

/** A rolling restart of two instances on one Redis: requests in flight finish through a graceful shutdown. */
class RedisRollingRestartTest extends RollingRestartSuite {

    private static final String PREFIX = RedisKeys.uniquePrefix("rolling");

    @Override
    protected Map<String, Object> storeProperties() {
        return Map.of("redis.uri", TestRedis.uri(), "idempotency.store.redis.key-prefix", PREFIX);
    }

    @AfterAll
    static void cleanUp() {
        TestRedis.deleteKeys(PREFIX);
    }
}
