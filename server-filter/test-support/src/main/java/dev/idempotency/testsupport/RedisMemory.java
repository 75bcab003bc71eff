package dev.idempotency.testsupport;

import io.lettuce.core.KeyScanCursor;
import io.lettuce.core.RedisClient;
import io.lettuce.core.ScanArgs;
import io.lettuce.core.ScanCursor;
import io.lettuce.core.api.StatefulRedisConnection;
import io.lettuce.core.api.sync.RedisCommands;
import io.lettuce.core.codec.ByteArrayCodec;

/**
 * What a set of keys costs a Redis server, as the server itself counts it: {@code MEMORY USAGE}
 * of every key under a prefix (found with {@code SCAN}, never {@code KEYS}). For tests and
 * benchmarks that put figures on a store's records.
 */
public final class RedisMemory {

    private RedisMemory() {
    }

    /**
     * @param keys  how many keys the prefix holds
     * @param bytes their {@code MEMORY USAGE} summed
     */
    public record Usage(int keys, long bytes) {
        /** @return bytes per key, 0 when there is none */
        public double perKey() {
            return keys == 0 ? 0 : bytes / (double) keys;
        }
    }

    /**
     * @param uri    the Redis server
     * @param prefix the keys to count, e.g. a store's {@code key-prefix}
     * @return how many keys start with {@code prefix} and what they take
     */
    public static Usage usage(String uri, String prefix) {
        RedisClient client = RedisClient.create(uri);
        try (StatefulRedisConnection<byte[], byte[]> c = client.connect(ByteArrayCodec.INSTANCE)) {
            RedisCommands<byte[], byte[]> redis = c.sync();
            ScanArgs match = ScanArgs.Builder.matches(prefix.replace("*", "\\*") + "*").limit(1000);
            int keys = 0;
            long bytes = 0;
            ScanCursor cursor = ScanCursor.INITIAL;
            do {
                KeyScanCursor<byte[]> page = redis.scan(cursor, match);
                for (byte[] key : page.getKeys()) {
                    Long used = redis.memoryUsage(key);
                    if (used != null) { // gone meanwhile (expired)
                        keys++;
                        bytes += used;
                    }
                }
                cursor = page;
            } while (!cursor.isFinished());
            return new Usage(keys, bytes);
        } finally {
            client.shutdown();
        }
    }
}
