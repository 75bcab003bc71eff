package dev.idempotency.messaging;

import dev.idempotency.messaging.internal.ConsumerTracing;
import dev.idempotency.messaging.internal.MessagingMetrics;
import dev.idempotency.server.store.IdempotencyStore;
import io.micronaut.context.BeanLocator;
import io.micronaut.context.exceptions.ConfigurationException;
import io.micronaut.core.annotation.Nullable;
import io.micronaut.inject.qualifiers.Qualifiers;
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
    private final BeanLocator beans;
    private final ConsumerTracing tracing;
    private ScheduledExecutorService timer; // guarded by this

    IdempotentConsumers(IdempotencyStore store, MessagingMetrics metrics, BeanLocator beans,
                        @Nullable ConsumerTracing tracing) {
        this.store = store;
        this.metrics = metrics;
        this.beans = beans;
        this.tracing = tracing;
    }

    /**
     * The handler of a configured consumer, for broker modules: the application's bean named like
     * the consumer ({@code @Named}), a {@link TransactionalMessageHandler} when the consumer is
     * transactional, else a {@link MessageHandler}.
     *
     * @param source what the consumer consumes, for the message, e.g. {@code queue payments.ledger}
     * @throws ConfigurationException when there is none, naming the bean to define
     */
    public Object handler(ConsumerSettings settings, String source) {
        Class<?> type = settings.transactional() ? TransactionalMessageHandler.class : MessageHandler.class;
        return beans.findBean(type, Qualifiers.byName(settings.name())).orElseThrow(() -> new ConfigurationException(
            "idempotency consumer '" + settings.name() + "' (" + source + ") has no handler: define a bean @Named(\""
                + settings.name() + "\") implementing " + type.getSimpleName() + (settings.transactional() ? ""
                : " (or make the consumer transactional for a TransactionalMessageHandler)")));
    }

    /**
     * @return a consumer with {@code settings}
     * @throws IllegalStateException when it is transactional and the store has no transactions
     */
    public IdempotentConsumer consumer(ConsumerSettings settings) {
        return new IdempotentConsumer(settings, store, timer(), metrics, tracing);
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
