package dev.idempotency.server;

import dev.idempotency.server.store.InMemoryIdempotencyStore;
import io.micronaut.context.annotation.Factory;
import io.micronaut.context.annotation.Requires;
import io.micronaut.context.annotation.Value;
import jakarta.inject.Singleton;

import java.time.Clock;

/**
 * Default beans: the UTC system {@link Clock} (when the application defines none) and the
 * in-memory store (unless another store module replaces it).
 */
@Factory
final class IdempotencyBeans {

    /** Property holding the in-memory store's capacity. */
    static final String MEMORY_MAX_ENTRIES = IdempotencyConfigurationProperties.PREFIX + ".store.memory.max-entries";

    @Singleton
    @Requires(missingBeans = Clock.class)
    Clock idempotencyClock() {
        return Clock.systemUTC();
    }

    @Singleton
    InMemoryIdempotencyStore inMemoryIdempotencyStore(
        Clock clock,
        @Value("${" + MEMORY_MAX_ENTRIES + ":" + InMemoryIdempotencyStore.DEFAULT_MAX_ENTRIES + "}") int maxEntries) {
        return new InMemoryIdempotencyStore(clock, maxEntries);
    }
}
