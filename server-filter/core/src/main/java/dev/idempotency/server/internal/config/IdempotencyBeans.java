package dev.idempotency.server.internal.config;

import dev.idempotency.server.store.BlockingIdempotencyStore;
import dev.idempotency.server.store.BlockingStoreAdapter;
import dev.idempotency.server.store.memory.InMemoryIdempotencyStore;
import io.micronaut.context.annotation.Bean;
import io.micronaut.context.annotation.Factory;
import io.micronaut.context.annotation.Replaces;
import io.micronaut.context.annotation.Requires;
import jakarta.inject.Singleton;

import java.time.Clock;

/**
 * Default beans: the UTC system {@link Clock} (when the application defines none) and the
 * adapter that runs an application's {@link BlockingIdempotencyStore} bean on a bounded executor
 * in place of the in-memory store (whose own bean is made in its package).
 */
@Factory
final class IdempotencyBeans {

    @Singleton
    @Requires(missingBeans = Clock.class)
    Clock idempotencyClock() {
        return Clock.systemUTC();
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
