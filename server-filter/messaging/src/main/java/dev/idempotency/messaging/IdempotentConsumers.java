package dev.idempotency.messaging;

import dev.idempotency.server.store.IdempotencyStore;
import jakarta.annotation.PreDestroy;
import jakarta.inject.Singleton;

import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;

/**
 * Makes {@link IdempotentConsumer}s on the application's active idempotency store (in-memory,
 * Redis or PostgreSQL), for broker adapters and for applications that consume by hand. Owns
 * the one timer thread they share (lease renewals, retries of a stored outcome), started on
 * first use.
 */
@Singleton
public final class IdempotentConsumers implements AutoCloseable {

    private final IdempotencyStore store;
    private final MessagingMetrics metrics;
    private ScheduledExecutorService timer; // guarded by this

    IdempotentConsumers(IdempotencyStore store, MessagingMetrics metrics) {
        this.store = store;
        this.metrics = metrics;
    }

    /**
     * @return a consumer with {@code settings}
     * @throws IllegalStateException when it is transactional and the store has no transactions
     */
    public IdempotentConsumer consumer(ConsumerSettings settings) {
        return new IdempotentConsumer(settings, store, timer(), metrics);
    }

    private synchronized ScheduledExecutorService timer() {
        if (timer == null) {
            timer = Executors.newSingleThreadScheduledExecutor(r -> {
                Thread t = new Thread(r, "idempotency-consumer-timer");
                t.setDaemon(true);
                return t;
            });
        }
        return timer;
    }

    @PreDestroy
    @Override
    public synchronized void close() {
        if (timer != null) {
            timer.shutdownNow();
        }
    }
}
