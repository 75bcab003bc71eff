package dev.idempotency.server.internal.config;

import dev.idempotency.server.Checks;
import dev.idempotency.server.IdempotencyConfigurationProperties;
import dev.idempotency.server.store.BlockingStoreAdapter;
import io.micronaut.context.annotation.ConfigurationProperties;

/**
 * {@code idempotency.store.blocking.*}: how an application's own
 * {@link dev.idempotency.server.store.BlockingIdempotencyStore} bean is run, used only when one
 * exists. Every setter checks its value and fails the application's startup with a message
 * naming the setting and the bad value.
 */
@ConfigurationProperties(BlockingStoreConfigurationProperties.PREFIX)
final class BlockingStoreConfigurationProperties {

    static final String PREFIX = IdempotencyConfigurationProperties.PREFIX + ".store.blocking";

    private int threads = BlockingStoreAdapter.DEFAULT_THREADS;
    private int queueCapacity = BlockingStoreAdapter.DEFAULT_QUEUE_CAPACITY;

    int getThreads() {
        return threads;
    }

    /**
     * How many calls into a blocking store run at once, each on a thread of the adapter. Default
     * {@value dev.idempotency.server.store.BlockingStoreAdapter#DEFAULT_THREADS}.
     *
     * @param threads at least 1
     */
    public void setThreads(int threads) {
        this.threads = Checks.atLeast(threads, 1, PREFIX + ".threads");
    }

    int getQueueCapacity() {
        return queueCapacity;
    }

    /**
     * How many more calls may wait for a thread; past that they fail at once and the request is
     * answered 503 {@code idempotency-store-unavailable} instead of queueing without bound. Default
     * {@value dev.idempotency.server.store.BlockingStoreAdapter#DEFAULT_QUEUE_CAPACITY}.
     *
     * @param queueCapacity at least 1
     */
    public void setQueueCapacity(int queueCapacity) {
        this.queueCapacity = Checks.atLeast(queueCapacity, 1, PREFIX + ".queue-capacity");
    }
}
