package dev.idempotency.server.internal.memory;

import dev.idempotency.server.Checks;
import dev.idempotency.server.IdempotencyConfigurationProperties;
import dev.idempotency.server.store.memory.InMemoryIdempotencyStore;
import io.micronaut.context.annotation.ConfigurationProperties;
import io.micronaut.core.annotation.Internal;
import io.micronaut.core.convert.format.ReadableBytes;

import java.time.Duration;

/**
 * {@code idempotency.store.memory.*}: the in-memory store's settings, used when no other store
 * module replaces it. Every setter checks its value and fails the application's startup with a
 * message naming the setting and the bad value.
 */
@Internal
@ConfigurationProperties(InMemoryStoreConfigurationProperties.PREFIX)
public final class InMemoryStoreConfigurationProperties {

    public static final String PREFIX = IdempotencyConfigurationProperties.PREFIX + ".store.memory";
    public static final String DEFAULT_PURGE_INTERVAL = "1m";

    private int maxEntries = InMemoryIdempotencyStore.DEFAULT_MAX_ENTRIES;
    private long maxBytes = InMemoryIdempotencyStore.DEFAULT_MAX_BYTES;
    private Duration purgeInterval = Duration.ofMinutes(1);

    public int getMaxEntries() {
        return maxEntries;
    }

    /**
     * The most records kept. When it is reached, completed records are evicted, oldest
     * completion first; when every record is a request still in progress, new keys are answered
     * 503 {@code idempotency-store-unavailable}. The heap the records take is bounded separately
     * by {@code max-bytes}. Default
     * {@value dev.idempotency.server.store.memory.InMemoryIdempotencyStore#DEFAULT_MAX_ENTRIES}.
     *
     * @param maxEntries 1 to {@value dev.idempotency.server.store.memory.InMemoryIdempotencyStore#MAX_ENTRIES_LIMIT}
     */
    public void setMaxEntries(int maxEntries) {
        Checks.atLeast(maxEntries, 1, PREFIX + ".max-entries");
        if (maxEntries > InMemoryIdempotencyStore.MAX_ENTRIES_LIMIT) {
            throw new IllegalArgumentException(PREFIX + ".max-entries must be at most "
                + InMemoryIdempotencyStore.MAX_ENTRIES_LIMIT + " (for more records, use a shared store), was " + maxEntries);
        }
        this.maxEntries = maxEntries;
    }

    public long getMaxBytes() {
        return maxBytes;
    }

    /**
     * The most heap the records may take, counting each record's key, fingerprint, stored
     * response (status, headers, body) and the objects that hold them, e.g. {@code 64MB}. When it
     * is reached, completed records are evicted, oldest completion first; a new key that still
     * finds no room is answered 503 {@code idempotency-store-unavailable} (its handler does not
     * run), and a response that still does not fit is kept without its body (its replay is an
     * omitted body). Default 64 MiB ({@value dev.idempotency.server.store.memory.InMemoryIdempotencyStore#DEFAULT_MAX_BYTES}
     * bytes): choose a modest share of the heap.
     *
     * @param maxBytes 64 KiB to 512 GiB
     */
    public void setMaxBytes(@ReadableBytes long maxBytes) {
        Checks.atLeast(maxBytes, 64 * 1024, PREFIX + ".max-bytes");
        if (maxBytes > InMemoryIdempotencyStore.MAX_BYTES_LIMIT) {
            throw new IllegalArgumentException(PREFIX + ".max-bytes must be at most 512GB, was " + maxBytes);
        }
        this.maxBytes = maxBytes;
    }

    public Duration getPurgeInterval() {
        return purgeInterval;
    }

    /**
     * How often expired records are removed from memory (they are never replayed after their
     * retention either way). Default {@value #DEFAULT_PURGE_INTERVAL}.
     *
     * @param purgeInterval more than zero
     */
    public void setPurgeInterval(Duration purgeInterval) {
        this.purgeInterval = Checks.positive(purgeInterval, PREFIX + ".purge-interval");
    }
}
