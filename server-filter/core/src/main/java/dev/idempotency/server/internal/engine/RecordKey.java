package dev.idempotency.server.internal.engine;

import io.micronaut.core.annotation.Internal;

/**
 * Which record a request is about: the store key (64 hex digits of SHA-256 over the scope and
 * the Idempotency-Key, see {@link RequestDigest}).
 *
 * @param storeKey the key the store files the record under
 */
@Internal
public record RecordKey(String storeKey) {

    /** @return the first 12 hex digits, the key's name in log lines (never the raw key) */
    String hash() {
        return storeKey.substring(0, 12);
    }

    @Override
    public String toString() {
        return hash();
    }
}
