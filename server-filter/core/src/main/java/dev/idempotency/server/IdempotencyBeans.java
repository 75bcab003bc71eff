package dev.idempotency.server;

import dev.idempotency.server.store.BlockingIdempotencyStore;
import dev.idempotency.server.store.BlockingStoreAdapter;
import dev.idempotency.server.store.InMemoryIdempotencyStore;
import io.micronaut.context.annotation.Bean;
import io.micronaut.context.annotation.Factory;
import io.micronaut.context.annotation.Replaces;
import io.micronaut.context.annotation.Requires;
import jakarta.inject.Singleton;

import java.time.Clock;

/**
 * Default beans: the UTC system {@link Clock} (when the application defines none), the
 * in-memory store (unless another store module replaces it), and the adapter that runs an
 * application's {@link BlockingIdempotencyStore} bean on a bounded executor in its place.
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
        return new InMemoryIdempotencyStore(clock, config.getMaxEntries(), config.getMaxBytes());
    }

    @Singleton
    @Requires(beans = BlockingIdempotencyStore.class)
    @Replaces(InMemoryIdempotencyStore.class)
    @Bean(preDestroy = "close")
    BlockingStoreAdapter blockingStoreAdapter(BlockingIdempotencyStore store,
                                              BlockingStoreConfigurationProperties config) {
        return new BlockingStoreAdapter(store, config.getThreads(), config.getQueueCapacity());
    }
}
