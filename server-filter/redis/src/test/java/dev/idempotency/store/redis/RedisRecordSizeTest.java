package dev.idempotency.store.redis;

import dev.idempotency.server.store.AcquireResult;
import dev.idempotency.server.store.IdempotencyStore;
import dev.idempotency.server.store.StoredResponse;
import dev.idempotency.testsupport.RedisMemory;
import dev.idempotency.testsupport.TestRedis;
import io.lettuce.core.RedisClient;
import io.micronaut.context.ApplicationContext;
import org.junit.jupiter.api.DisplayName;
import org.junit.jupiter.api.Test;

import java.time.Duration;
import java.util.Arrays;
import java.util.List;
import java.util.Map;
import java.util.UUID;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * What one record costs Redis, counted by Redis ({@code MEMORY USAGE}, {@link RedisMemory}): one
 * key per record, nothing beside it. The figures printed here are the ones in
 * {@code benchmarks/README.md}; the bound asserted is a regression guard, far from the 496 bytes
 * (a 360-byte hash and a 136-byte token key) a record with a 75-byte body took before.
 */
class RedisRecordSizeTest {

    private static final Duration LEASE = Duration.ofSeconds(30);
    private static final Duration RETENTION = Duration.ofMinutes(10);

    private static StoredResponse response(int bodyBytes) {
        byte[] body = new byte[bodyBytes];
        Arrays.fill(body, (byte) 'a');
        return new StoredResponse(201, Map.of("Content-Type", List.of("application/json"),
            "Location", List.of("/payments/pay_0123456789abcdef")), body, false);
    }

    @Test
    @DisplayName("S17: a completed record is one key; with a 75-byte body it takes under 400 bytes of Redis memory")
    void bytesPerRecord() {
        // as long as the default prefix "idempotency:", so the key costs what it costs in production
        String prefix = "idm" + UUID.randomUUID().toString().substring(0, 8) + ":";
        try (ApplicationContext ctx = ApplicationContext.run(Map.of("redis.uri", TestRedis.uri(),
            "idempotency.store.redis.key-prefix", prefix))) {
            IdempotencyStore store = ctx.getBean(IdempotencyStore.class);
            StringBuilder figures = new StringBuilder("Redis bytes per record (MEMORY USAGE):");
            for (int size : new int[] {75, 100, 10 * 1024, 1024 * 1024}) {
                RedisClient cleaner = RedisClient.create(TestRedis.uri());
                int records = size >= 1024 * 1024 ? 5 : 100;
                for (int i = 0; i < records; i++) {
                    String key = size + "-" + UUID.randomUUID();
                    long token = ((AcquireResult.Acquired) store.acquire(key, new byte[33], LEASE).toCompletableFuture()
                        .join()).fencingToken();
                    assertThat(store.complete(key, token, response(size), RETENTION).toCompletableFuture().join()).isTrue();
                }
                RedisMemory.Usage usage = RedisMemory.usage(TestRedis.uri(), prefix);
                figures.append(String.format(" %d B body: %.0f;", size, usage.perKey()));
                assertThat(usage.keys()).as("one key per record, nothing beside it").isEqualTo(records);
                if (size == 75) {
                    assertThat(usage.perKey()).isLessThan(400);
                }
                TestRedis.deleteKeys(cleaner, prefix);
                cleaner.shutdown();
            }
            System.out.println(figures);
        }
    }
}
