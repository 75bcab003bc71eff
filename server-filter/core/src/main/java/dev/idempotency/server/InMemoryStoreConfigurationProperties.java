package dev.idempotency.server;

import dev.idempotency.server.store.InMemoryIdempotencyStore;
import io.micronaut.context.annotation.ConfigurationProperties;

import java.time.Duration;

/**
 * {@code idempotency.store.memory.*}: the in-memory store's settings, used when no other store
 * module replaces it. Every setter checks its value and fails the application's startup with a
 * message naming the setting and the bad value.
 */
@ConfigurationProperties(InMemoryStoreConfigurationProperties.PREFIX)
final class InMemoryStoreConfigurationProperties {

    static final String PREFIX = IdempotencyConfigurationProperties.PREFIX + ".store.memory";
    static final String DEFAULT_PURGE_INTERVAL = "1m";

    private int maxEntries = InMemoryIdempotencyStore.DEFAULT_MAX_ENTRIES;
    private Duration purgeInterval = Duration.ofMinutes(1);

    int getMaxEntries() {
        return maxEntries;
    }

    /**
     * The most records kept. When it is reached, completed records are evicted, oldest
     * completion first; when every record is a request still in progress, new keys are answered
     * 503 {@code idempotency-store-unavailable}. Size it for the heap you can spare: a record
     * holds its stored response, body included (up to {@code idempotency.max-stored-body-size}).
     * Default
     * {@value dev.idempotency.server.store.InMemoryIdempotencyStore#DEFAULT_MAX_ENTRIES}.
     *
     * @param maxEntries at least 1
     */
    public void setMaxEntries(int maxEntries) {
        this.maxEntries = Checks.atLeast(maxEntries, 1, PREFIX + ".max-entries");
    }

    Duration getPurgeInterval() {
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
