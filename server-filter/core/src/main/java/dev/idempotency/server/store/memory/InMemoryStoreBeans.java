package dev.idempotency.server.store.memory;

import io.micronaut.context.annotation.Factory;
import jakarta.inject.Singleton;

import java.time.Clock;

/**
 * The default store: the in-memory one, sized by {@link InMemoryStoreConfigurationProperties},
 * unless a store module or an application's store bean replaces it.
 */
@Factory
final class InMemoryStoreBeans {

    @Singleton
    InMemoryIdempotencyStore inMemoryIdempotencyStore(Clock clock, InMemoryStoreConfigurationProperties config) {
        return new InMemoryIdempotencyStore(clock, config.getMaxEntries(), config.getMaxBytes());
    }
}
