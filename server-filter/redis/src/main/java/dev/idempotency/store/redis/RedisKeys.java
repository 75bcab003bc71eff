package dev.idempotency.store.redis;

import java.nio.charset.StandardCharsets;

/**
 * The Redis keys of a store key {@code K} under the prefix {@code P}: the record {@code P{K}} and
 * its steps {@code P{K}:steps}, in one Redis Cluster slot by the hash tag {@code {K}}.
 */
final class RedisKeys {

    private final String prefix;
    /** {@code prefix} and the opening brace, in UTF-8: the start of every record's key. */
    private final byte[] head;

    RedisKeys(String prefix) {
        this.prefix = prefix;
        this.head = (prefix + "{").getBytes(StandardCharsets.UTF_8);
    }

    String prefix() {
        return prefix;
    }

    /** @return the Redis key of the record of {@code storeKey} */
    String recordText(String storeKey) {
        return prefix + "{" + storeKey + "}";
    }

    /**
     * @return {@link #recordText} in UTF-8, built in one array when the store key is ASCII (the
     *     filter's always are: every acquire and completion comes through here), else encoded
     */
    byte[] record(String storeKey) {
        int n = storeKey.length();
        byte[] key = new byte[head.length + n + 1];
        System.arraycopy(head, 0, key, 0, head.length);
        for (int i = 0; i < n; i++) {
            char c = storeKey.charAt(i);
            if (c >= 0x80) {
                return recordText(storeKey).getBytes(StandardCharsets.UTF_8);
            }
            key[head.length + i] = (byte) c;
        }
        key[key.length - 1] = '}';
        return key;
    }

    /** @return the key of the record's steps: {@code P{K}:steps}, in the record's hash slot */
    byte[] steps(String storeKey) {
        return (recordText(storeKey) + ":steps").getBytes(StandardCharsets.UTF_8);
    }
}
