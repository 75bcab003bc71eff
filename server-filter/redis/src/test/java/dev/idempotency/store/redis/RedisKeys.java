package dev.idempotency.store.redis;

import io.lettuce.core.KeyScanCursor;
import io.lettuce.core.RedisClient;
import io.lettuce.core.ScanArgs;
import io.lettuce.core.ScanCursor;
import io.lettuce.core.api.StatefulRedisConnection;

import java.util.UUID;

/** Key-prefix isolation for tests on the shared Redis. */
final class RedisKeys {

    private RedisKeys() {
    }

    /** @return a prefix no other test run uses */
    static String uniquePrefix(String test) {
        return "idempotency-test:" + test + ":" + UUID.randomUUID() + ":";
    }

    /** Deletes every key starting with {@code prefix} (SCAN + UNLINK); returns how many. */
    static int deleteAll(RedisClient client, String prefix) {
        int deleted = 0;
        try (StatefulRedisConnection<String, String> c = client.connect()) {
            ScanCursor cursor = ScanCursor.INITIAL;
            do {
                KeyScanCursor<String> page = c.sync().scan(cursor, ScanArgs.Builder.matches(prefix + "*").limit(500));
                if (!page.getKeys().isEmpty()) {
                    deleted += c.sync().unlink(page.getKeys().toArray(String[]::new)).intValue();
                }
                cursor = page;
            } while (!cursor.isFinished());
        }
        return deleted;
    }
}
