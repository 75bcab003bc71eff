package dev.idempotency.store.redis;

import dev.idempotency.store.tck.NonBlockingFilterSuite;
import dev.idempotency.testsupport.TestRedis;
import org.junit.jupiter.api.AfterAll;

import java.util.Map;

/**
 * S17: the filter on the Redis store blocks no event-loop thread, neither the HTTP server's nor
 * Lettuce's (BlockHound).
 */
class RedisNonBlockingTest extends NonBlockingFilterSuite {

    private static final String PREFIX = RedisKeys.uniquePrefix("nonblocking");

    @Override
    protected Map<String, Object> storeProperties() {
        return Map.of("redis.uri", TestRedis.uri(), "idempotency.store.redis.key-prefix", PREFIX);
    }

    @AfterAll
    static void cleanUp() {
        TestRedis.deleteKeys(PREFIX);
    }
}
