package dev.idempotency.store.redis;

import java.util.UUID;

/** Key-prefix isolation for tests on the shared Redis (they delete their keys with {@code TestRedis.deleteKeys}). */
final class RedisKeys {

    private RedisKeys() {
    }

    /** @return a prefix no other test run uses */
    static String uniquePrefix(String test) {
        return "idempotency-test:" + test + ":" + UUID.randomUUID() + ":";
    }
}
