package dev.idempotency.server.internal.memory;

import dev.idempotency.server.store.memory.InMemoryIdempotencyStore;
import io.micronaut.context.annotation.Factory;
import io.micronaut.core.annotation.Internal;
import jakarta.inject.Singleton;

import java.time.Clock;

/**
 * The default store: the in-memory one, sized by {@link InMemoryStoreConfigurationProperties},
 * unless a store module or an application's store bean replaces it.
 */
@Internal
@Factory
public final class InMemoryStoreBeans {

    @Singleton
    public InMemoryIdempotencyStore inMemoryIdempotencyStore(Clock clock, InMemoryStoreConfigurationProperties config) {
        return new InMemoryIdempotencyStore(clock, config.getMaxEntries(), config.getMaxBytes());
    }
}
