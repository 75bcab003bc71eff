package dev.idempotency.server.store.memory;

import dev.idempotency.server.internal.util.HexDigits;
import dev.idempotency.server.store.AcquireResult;
import dev.idempotency.server.store.IdempotencyStore;
import dev.idempotency.server.store.StoredResponse;
import dev.idempotency.server.store.StoredResponseCodec;
import dev.idempotency.testsupport.MutableClock;
import org.junit.jupiter.api.DisplayName;
import org.junit.jupiter.api.Test;

import java.security.MessageDigest;
import java.time.Clock;
import java.time.Duration;
import java.util.HexFormat;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import java.util.concurrent.CompletionStage;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * CONTRACT S17: how the in-memory store keeps a record. The filter's store keys (64 lowercase hex
 * digits) are kept as four longs, any other key as itself, and no two store keys ever share a
 * record; the byte count the store bounds itself by follows that layout.
 */
class InMemoryRecordLayoutTest {

    private static final Duration LEASE = Duration.ofSeconds(30);

    private final InMemoryIdempotencyStore store = new InMemoryIdempotencyStore(Clock.systemUTC(), 1000);

    @Test
    @DisplayName("S17: a SHA-256 store key becomes a key of four longs that prints as the same 64 digits")
    void hexKeysAreCompact() throws Exception {
        for (int i = 0; i < 100; i++) {
            String key = HexFormat.of().formatHex(MessageDigest.getInstance("SHA-256")
                .digest(UUID.randomUUID().toString().getBytes()));
            Object mapKey = HexKey.mapKey(key);
            assertThat(mapKey).isInstanceOf(HexKey.class);
            assertThat(mapKey.toString()).isEqualTo(key);
            assertThat(HexKey.mapKey(new String(key.toCharArray())))
                .isEqualTo(mapKey).hasSameHashCodeAs(mapKey);
        }
        assertThat(HexKey.mapKey("0".repeat(64)).toString()).isEqualTo("0".repeat(64));
        assertThat(HexKey.mapKey("f".repeat(64)).toString()).isEqualTo("f".repeat(64));
    }

    @Test
    @DisplayName("S17: hex keys order as their digits do, so keys colliding in one map bin still find each other in a tree")
    void hexKeysOrderLikeTheirDigits() throws Exception {
        java.util.Random random = new java.util.Random(11);
        for (int i = 0; i < 1000; i++) {
            byte[] x = new byte[32];
            byte[] y = new byte[32];
            random.nextBytes(x);
            System.arraycopy(x, 0, y, 0, 32);
            y[random.nextInt(32)] ^= (byte) (1 << random.nextInt(8)); // differ in one bit, anywhere
            String sx = HexFormat.of().formatHex(x);
            String sy = HexFormat.of().formatHex(y);
            HexKey kx = (HexKey) HexKey.mapKey(sx);
            HexKey ky = (HexKey) HexKey.mapKey(sy);
            assertThat(Integer.signum(kx.compareTo(ky))).as("%s vs %s", sx, sy).isEqualTo(Integer.signum(sx.compareTo(sy)));
            assertThat(kx.compareTo((HexKey) HexKey.mapKey(sx))).isZero();
        }
    }

    @Test
    @DisplayName("S17: only 64 lowercase hex digits are the filter's key form")
    void digestKeyForm() {
        assertThat(IdempotencyStore.isDigestKey("0123456789abcdef".repeat(4))).isTrue();
        assertThat(IdempotencyStore.isDigestKey("0123456789ABCDEF".repeat(4))).isFalse();
        assertThat(IdempotencyStore.isDigestKey("0123456789abcdef".repeat(4).substring(1) + "g")).isFalse();
        assertThat(IdempotencyStore.isDigestKey("0123456789abcdef".repeat(4) + "0")).isFalse();
        assertThat(IdempotencyStore.isDigestKey("")).isFalse();
    }

    @Test
    @DisplayName("S17: the digit table knows exactly the lowercase hex digits, of every char")
    void everyCharHasItsDigitValue() {
        for (int c = Character.MIN_VALUE; c <= Character.MAX_VALUE; c++) {
            int expected = c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10 : -1;
            assertThat(HexDigits.value((char) c)).as("char %04x", c).isEqualTo(expected);
        }
        // a character past ASCII whose low seven bits are a digit is not one
        assertThat(IdempotencyStore.isDigestKey("0123456789abcdef".repeat(4).substring(1) + (char) ('a' + 0x80)))
            .isFalse();
        assertThat(HexKey.mapKey("0".repeat(63) + (char) ('0' + 0x100))).isInstanceOf(String.class);
    }

    @Test
    @DisplayName("S17: keys that are not 64 lowercase hex digits stay strings, and each is a record of its own")
    void otherKeysAreTheirOwnRecords() {
        String hex = "0123456789abcdef".repeat(4);
        List<String> keys = List.of(hex, hex.toUpperCase(), hex.substring(1), hex + "0", hex.substring(1) + "g",
            "k1", "", "schlüssel/Zoë");
        for (String key : keys) {
            if (!key.equals(hex)) {
                assertThat(HexKey.mapKey(key)).isSameAs(key);
            }
            // the store's parser accepts exactly the SPI's key form
            assertThat(HexKey.mapKey(key) instanceof HexKey)
                .as("key %s", key).isEqualTo(IdempotencyStore.isDigestKey(key));
        }
        for (int i = 0; i < keys.size(); i++) {
            assertThat(join(store.acquire(keys.get(i), new byte[] {(byte) i}, LEASE)))
                .as("key %s", keys.get(i)).isInstanceOf(AcquireResult.Acquired.class);
        }
        for (int i = 0; i < keys.size(); i++) {
            String key = keys.get(i);
            assertThat(join(store.find(key))).hasValueSatisfying(info -> assertThat(info.storeKey()).isEqualTo(key));
            assertThat(join(store.acquire(key, new byte[] {(byte) i}, LEASE))).as("key %s", key)
                .isInstanceOf(AcquireResult.InProgress.class);
        }
        assertThat(store.size()).isEqualTo(keys.size());
    }

    @Test
    @DisplayName("S17: a record counts its overhead, its key, its fingerprint and, once completed, its encoded response")
    void byteCountFollowsTheLayout() {
        String hex = "89abcdef01234567".repeat(4);
        byte[] fingerprint = new byte[33];
        long token = ((AcquireResult.Acquired) join(store.acquire(hex, fingerprint, LEASE))).fencingToken();
        long inProgress = InMemoryIdempotencyStore.RECORD_OVERHEAD + InMemoryIdempotencyStore.HEX_KEY_WEIGHT + 33;
        assertThat(store.bytes()).isEqualTo(inProgress);

        StoredResponse response = new StoredResponse(201, Map.of("Content-Type", List.of("application/json")),
            "{\"id\":1}".getBytes(), false);
        assertThat(join(store.complete(hex, token, response, Duration.ofMinutes(1)))).isTrue();
        assertThat(store.bytes()).isEqualTo(inProgress + StoredResponseCodec.encode(response).length);
        assertThat(join(store.acquire(hex, fingerprint, LEASE))).isInstanceOfSatisfying(AcquireResult.Replay.class,
            r -> assertThat(r.response()).isEqualTo(response));
        assertThat(store.keysShared()).as("the record holds its map node's key, not a second copy").isTrue();
        byte[] other = fingerprint.clone();
        other[32] = 1;
        assertThat(join(store.acquire(hex, other, LEASE))).isInstanceOf(AcquireResult.Mismatch.class);
        assertThat(join(store.acquire(hex, new byte[32], LEASE))).isInstanceOf(AcquireResult.Mismatch.class);
    }

    @Test
    @DisplayName("S17: renewals, completions and take-overs keep one key object per record")
    void oneKeyObjectPerRecord() {
        MutableClock clock = new MutableClock();
        InMemoryIdempotencyStore s = new InMemoryIdempotencyStore(clock, 1000);
        byte[] fingerprint = {1};
        for (int i = 0; i < 20; i++) {
            String key = String.format("%064x", i);
            long token = ((AcquireResult.Acquired) join(s.acquire(key, fingerprint, LEASE))).fencingToken();
            assertThat(join(s.renew(key, token, LEASE))).isTrue();
            if (i % 2 == 0) {
                assertThat(join(s.complete(key, token, new StoredResponse(200, Map.of(), new byte[0], false),
                    Duration.ofMinutes(1)))).isTrue();
            }
        }
        clock.advance(LEASE.plusSeconds(1));
        for (int i = 1; i < 20; i += 2) {
            assertThat(join(s.acquire(String.format("%064x", i), fingerprint, LEASE)))
                .isInstanceOfSatisfying(AcquireResult.Acquired.class, a -> assertThat(a.takeover()).isTrue());
        }
        assertThat(s.size()).isEqualTo(20);
        assertThat(s.keysShared()).isTrue();
    }

    private static <T> T join(CompletionStage<T> stage) {
        return stage.toCompletableFuture().join();
    }
}
