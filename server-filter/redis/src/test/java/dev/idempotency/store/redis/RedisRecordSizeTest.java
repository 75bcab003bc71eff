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

    private static final String TRACE = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01";

    @Test
    @DisplayName("O4: what tracing adds to a record (75-byte body), in progress and completed, counted by Redis")
    void tracedRecordBytes() {
        String prefix = "idm" + UUID.randomUUID().toString().substring(0, 8) + ":";
        try (ApplicationContext ctx = ApplicationContext.run(Map.of("redis.uri", TestRedis.uri(),
            "idempotency.store.redis.key-prefix", prefix))) {
            IdempotencyStore store = ctx.getBean(IdempotencyStore.class);
            RedisClient cleaner = RedisClient.create(TestRedis.uri());
            try {
                double[] perKey = new double[4]; // in progress, completed; untraced, traced
                for (int traced = 0; traced < 2; traced++) {
                    List<String> keys = new java.util.ArrayList<>();
                    List<Long> tokens = new java.util.ArrayList<>();
                    for (int i = 0; i < 100; i++) {
                        String key = "t-" + UUID.randomUUID();
                        keys.add(key);
                        tokens.add(((AcquireResult.Acquired) store.acquire(key, new byte[33], LEASE,
                            traced == 1 ? TRACE : null).toCompletableFuture().join()).fencingToken());
                    }
                    perKey[traced] = RedisMemory.usage(TestRedis.uri(), prefix).perKey();
                    for (int i = 0; i < 100; i++) {
                        StoredResponse r = response(75).withTraceparent(traced == 1 ? TRACE : null);
                        assertThat(store.complete(keys.get(i), tokens.get(i), r, RETENTION).toCompletableFuture().join())
                            .isTrue();
                    }
                    perKey[2 + traced] = RedisMemory.usage(TestRedis.uri(), prefix).perKey();
                    TestRedis.deleteKeys(cleaner, prefix);
                }
                System.out.printf("Redis bytes per record with tracing (MEMORY USAGE, 75 B body): in progress %.0f"
                    + " (untraced %.0f), completed %.0f (untraced %.0f)%n", perKey[1], perKey[0], perKey[3], perKey[2]);
                // the trace context is 55 bytes of text (63 in the completed record's header block);
                // the allocator's size classes may round either way
                assertThat(perKey[1] - perKey[0]).isBetween(40.0, 100.0);
                assertThat(perKey[3] - perKey[2]).isBetween(40.0, 100.0);
            } finally {
                cleaner.shutdown();
            }
        }
    }
}
