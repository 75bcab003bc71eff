package dev.idempotency.store.postgres;

import dev.idempotency.server.store.IdempotencyStore;

import java.nio.charset.StandardCharsets;
import java.util.Arrays;
import java.util.HexFormat;

/**
 * How a store key is kept in the {@code store_key bytea} column: the filter's keys (64
 * lower-case hex digits of a SHA-256) as their 32 bytes, half the size of the text; any other
 * key, which the SPI allows, as a zero byte, its UTF-8 bytes and, only when that makes 32 bytes,
 * a trailing {@code 0xFF} (a byte UTF-8 never contains). So a stored value of 32 bytes is always a
 * hash, and every key round-trips exactly. The V3 migration converts existing rows the same way.
 */
final class StoreKeys {

    private static final int HASH_BYTES = 32;
    private static final HexFormat HEX = HexFormat.of();

    private StoreKeys() {
    }

    static byte[] encode(String storeKey) {
        if (IdempotencyStore.isDigestKey(storeKey)) {
            return HEX.parseHex(storeKey);
        }
        byte[] text = storeKey.getBytes(StandardCharsets.UTF_8);
        boolean pad = text.length + 1 == HASH_BYTES;
        byte[] value = new byte[text.length + 1 + (pad ? 1 : 0)];
        System.arraycopy(text, 0, value, 1, text.length);
        if (pad) {
            value[value.length - 1] = (byte) 0xFF;
        }
        return value;
    }

    static String decode(byte[] value) {
        if (value.length == HASH_BYTES) {
            return HEX.formatHex(value);
        }
        int end = value.length > 0 && value[value.length - 1] == (byte) 0xFF ? value.length - 1 : value.length;
        return new String(Arrays.copyOfRange(value, 1, end), StandardCharsets.UTF_8);
    }
}
