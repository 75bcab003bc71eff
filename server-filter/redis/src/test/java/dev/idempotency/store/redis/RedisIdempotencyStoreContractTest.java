package dev.idempotency.store.redis;

import dev.idempotency.testsupport.Await;
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

import io.lettuce.core.codec.ByteArrayCodec;

import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

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
        prefix = TestRedis.uniquePrefix("contract");
    }

    @AfterAll
    static void cleanUp() {
        TestRedis.deleteKeys(client, prefix);
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

    /** The record's bytes as Redis holds them. */
    private byte[] raw(String key) {
        try (StatefulRedisConnection<byte[], byte[]> c = client.connect(ByteArrayCodec.INSTANCE)) {
            return c.sync().get(redisStore.recordKeyText(key).getBytes(StandardCharsets.UTF_8));
        }
    }

    private static long longAt(byte[] b, int at) {
        return ByteBuffer.wrap(b, at, 8).getLong();
    }

    @Test
    @DisplayName("S17: the record is the documented binary string, under one hash-tagged key")
    void layoutAsDocumented() {
        String key = newKey();
        byte[] fp = fingerprint("a");
        long token = acquire(key);
        assertThat(redisStore.recordKeyText(key)).isEqualTo(prefix + "{" + key + "}");
        byte[] inProgress = raw(key);
        assertThat(inProgress[0]).isEqualTo((byte) 2);
        assertThat((char) inProgress[1]).isEqualTo('P');
        assertThat(longAt(inProgress, 2)).isEqualTo(token);
        assertThat(longAt(inProgress, 10)).isEqualTo(clock.millis() + LEASE.toMillis());
        assertThat(ByteBuffer.wrap(inProgress, 18, 2).getShort()).isEqualTo((short) fp.length);
        assertThat(Arrays.copyOfRange(inProgress, 20, inProgress.length)).isEqualTo(fp);

        Map<String, List<String>> headers = new LinkedHashMap<>();
        headers.put("Content-Type", List.of("text/plain"));
        byte[] body = "hé".getBytes(StandardCharsets.UTF_8);
        complete(key, token, new dev.idempotency.server.store.StoredResponse(201, headers, body, false), RETENTION);
        byte[] completed = raw(key);
        int at = 20 + fp.length;
        assertThat((char) completed[1]).isEqualTo('C');
        assertThat(longAt(completed, 2)).isEqualTo(token);
        assertThat(longAt(completed, 10)).isEqualTo(clock.millis() + RETENTION.toMillis());
        assertThat(Arrays.copyOfRange(completed, 20, at)).isEqualTo(fp);
        assertThat(ByteBuffer.wrap(completed, at, 2).getShort()).isEqualTo((short) 201);
        assertThat(completed[at + 2]).isZero();
        int h = ByteBuffer.wrap(completed, at + 3, 4).getInt();
        assertThat(completed[at + 7]).as("header encoding version").isEqualTo((byte) 1);
        assertThat(Arrays.copyOfRange(completed, at + 7 + h, completed.length)).isEqualTo(body);
    }

    @Test
    @DisplayName("S17: a store key outside ASCII is kept under its UTF-8 bytes, apart from keys that differ in one"
        + " character, and replays")
    void nonAsciiStoreKeys() {
        String key = newKey() + "-clé-日本";
        String other = key.replace('é', 'e');
        long token = acquire(key);
        assertThat(raw(key)).as("the record under prefix{key} in UTF-8").isNotNull();
        assertThat(raw(other)).isNull();
        assertThat(complete(key, token, response(201, "made"), RETENTION)).isTrue();
        assertThat(acquire(key, fingerprint("a"), LEASE)).isInstanceOf(AcquireResult.Replay.class);
        assertThat(acquire(other, fingerprint("a"), LEASE)).isInstanceOf(AcquireResult.Acquired.class);
    }

    @Test
    @DisplayName("S12/S16: TTLs: in progress = lease + late-completion window; completed = retention + grace;"
        + " a release leaves a tombstone for the grace, so no key outlives its record by more than the grace")
    void ttls() {
        String key = newKey();
        long token = acquire(key);
        try (StatefulRedisConnection<String, String> c = client.connect()) {
            String recordKey = prefix + "{" + key + "}";
            long window = RedisIdempotencyStoreConfigurationProperties.DEFAULT_LATE_COMPLETION_WINDOW.toMillis();
            long inProgressTtl = LEASE.toMillis() + window;
            assertThat(c.sync().pttl(recordKey)).isBetween(inProgressTtl - 5_000, inProgressTtl);

            Duration retention = Duration.ofMinutes(10);
            complete(key, token, response(200, "ok"), retention);
            long completedTtl = retention.plus(RedisIdempotencyStoreConfigurationProperties.DEFAULT_EXPIRY_GRACE).toMillis();
            assertThat(c.sync().pttl(recordKey)).isBetween(completedTtl - 5_000, completedTtl);

            String released = newKey();
            assertThat(release(released, acquire(released))).isTrue();
            long grace = RedisIdempotencyStoreConfigurationProperties.DEFAULT_EXPIRY_GRACE.toMillis();
            assertThat(c.sync().pttl(prefix + "{" + released + "}")).isBetween(grace - 5_000, grace);
        }
    }

    @Test
    @DisplayName("S12/S16: with a zero expiry-grace a release deletes the record; the next acquire is new, its token"
        + " still above, and the released holder's late completion is refused")
    void releaseWithoutGraceLeavesNoKey() {
        RedisIdempotencyStoreConfigurationProperties noGrace = config(prefix);
        noGrace.setExpiryGrace(Duration.ZERO);
        try (RedisIdempotencyStore store = new RedisIdempotencyStore(client, List.of(RedisURI.create(TestRedis.uri())),
                clock, noGrace);
             StatefulRedisConnection<String, String> c = client.connect()) {
            String key = newKey();
            long first = ((AcquireResult.Acquired) join(store.acquire(key, fingerprint("a"), LEASE))).fencingToken();
            assertThat(join(store.release(key, first))).isTrue();
            assertThat(c.sync().exists(prefix + "{" + key + "}")).isZero();

            clock.advance(Duration.ofMillis(1));
            AcquireResult again = join(store.acquire(key, fingerprint("a"), LEASE));
            assertThat(again).isInstanceOf(AcquireResult.Acquired.class);
            assertThat(((AcquireResult.Acquired) again).fencingToken()).isGreaterThan(first);
            assertThat(join(store.complete(key, first, response(200, "late"), RETENTION))).isFalse();
        }
    }

    @Test
    @DisplayName("S12: a replay, a mismatch and a 409 write nothing: the record and its TTL stay as they were")
    void answersThatDoNotAcquireWriteNothing() {
        String key = newKey();
        long token = acquire(key);
        byte[] before = raw(key);
        assertThat(acquire(key, fingerprint("a"), LEASE)).isInstanceOf(AcquireResult.InProgress.class);
        assertThat(acquire(key, fingerprint("b"), LEASE)).isInstanceOf(AcquireResult.Mismatch.class);
        assertThat(raw(key)).isEqualTo(before);
        complete(key, token, response(200, "ok"), RETENTION);
        byte[] completed = raw(key);
        assertThat(acquire(key, fingerprint("a"), LEASE)).isEqualTo(new AcquireResult.Replay(response(200, "ok")));
        assertThat(raw(key)).isEqualTo(completed);
    }

    @Test
    @DisplayName("S16: with the real clock Redis deletes a completed record once retention + grace has passed")
    void redisCollectsExpiredRecords() throws InterruptedException {
        RedisIdempotencyStoreConfigurationProperties cfg = config(prefix);
        cfg.setExpiryGrace(Duration.ZERO);
        try (RedisIdempotencyStore real = new RedisIdempotencyStore(client, List.of(RedisURI.create(TestRedis.uri())),
                java.time.Clock.systemUTC(), cfg);
             StatefulRedisConnection<String, String> c = client.connect()) {
            String key = newKey();
            long token = ((AcquireResult.Acquired) join(real.acquire(key, fingerprint("a"), LEASE))).fencingToken();
            assertThat(join(real.complete(key, token, response(200, "ok"), Duration.ofMillis(300)))).isTrue();
            Await.until("Redis deleted the expired record", Duration.ofSeconds(10),
                () -> c.sync().exists(prefix + "{" + key + "}") == 0);
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
    @DisplayName("S12: fencing tokens keep increasing: after a release (the tombstone keeps the token), when the"
        + " record is gone (seeded from the clock), and when the next instance's clock is behind")
    void tokensKeepIncreasing() {
        String key = newKey();
        long first = acquire(key);
        assertThat(release(key, first)).isTrue();
        long second = acquire(key);
        assertThat(second).isGreaterThan(first);
        assertThat(release(key, second)).isTrue();
        try (StatefulRedisConnection<String, String> c = client.connect()) {
            c.sync().del(prefix + "{" + key + "}");
        }
        clock.advance(Duration.ofSeconds(1));
        long third = acquire(key);
        assertThat(third).isGreaterThan(second);
        assertThat(release(key, third)).isTrue();

        // another instance whose clock is a minute behind: the tombstone's token still wins
        MutableClock behind = new MutableClock(clock.instant().minus(Duration.ofMinutes(1)));
        try (RedisIdempotencyStore other = new RedisIdempotencyStore(client, List.of(RedisURI.create(TestRedis.uri())),
                behind, config(prefix))) {
            AcquireResult r = join(other.acquire(key, fingerprint("a"), LEASE));
            assertThat(((AcquireResult.Acquired) r).fencingToken()).isGreaterThan(third);
            assertThat(((AcquireResult.Acquired) r).takeover()).isFalse();
        }
    }

    @Test
    @DisplayName("S17: a record that is not in the store's format fails the call with IdempotencyStoreException,"
        + " and is left alone")
    void foreignRecordFailsClearly() {
        String key = newKey();
        refusedAndLeftAlone(key, "something else".getBytes(StandardCharsets.UTF_8), "not a format-2 record");
    }

    @Test
    @DisplayName("S17: a completed record whose response is damaged fails the call with IdempotencyStoreException,"
        + " which names the record and what is wrong, and is left alone")
    void damagedResponseFailsClearly() {
        String key = newKey();
        long token = acquire(key);
        assertThat(complete(key, token, response(201, "made"), RETENTION)).isTrue();
        byte[] damaged = raw(key);
        damaged[20 + fingerprint("a").length + 7] = 9; // the header block's version byte
        refusedAndLeftAlone(key, damaged, "record " + prefix + "{" + key + "}", "unknown header block version 9");
    }

    /** Stores {@code record} under {@code key}: an acquire of it fails saying {@code what}, and the record stays. */
    private void refusedAndLeftAlone(String key, byte[] record, String... what) {
        byte[] recordKey = redisStore.recordKeyText(key).getBytes(StandardCharsets.UTF_8);
        try (StatefulRedisConnection<byte[], byte[]> c = client.connect(ByteArrayCodec.INSTANCE)) {
            c.sync().set(recordKey, record);
            assertThatThrownBy(() -> acquire(key, fingerprint("a"), LEASE))
                .isInstanceOf(dev.idempotency.server.store.IdempotencyStoreException.class)
                .hasMessageContainingAll(what);
            assertThat(c.sync().get(recordKey)).isEqualTo(record);
        }
    }
}
