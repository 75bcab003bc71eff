package dev.idempotency.server;

import dev.idempotency.server.store.InMemoryIdempotencyStore;
import io.micronaut.context.annotation.Factory;
import io.micronaut.context.annotation.Requires;
import jakarta.inject.Singleton;

import java.time.Clock;

/**
 * Default beans: the UTC system {@link Clock} (when the application defines none) and the
 * in-memory store (unless another store module replaces it).
 */
@Factory
final class IdempotencyBeans {

    @Singleton
    @Requires(missingBeans = Clock.class)
    Clock idempotencyClock() {
        return Clock.systemUTC();
    }

    @Singleton
    InMemoryIdempotencyStore inMemoryIdempotencyStore(
        Clock clock, InMemoryStoreConfigurationProperties config) {
        return new InMemoryIdempotencyStore(clock, config.getMaxEntries());
    }
}
