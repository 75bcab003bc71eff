package dev.idempotency.rabbitmq;

import dev.idempotency.messaging.ConsumerSettings;
import dev.idempotency.server.Checks;
import io.micronaut.context.annotation.EachProperty;
import io.micronaut.context.annotation.Parameter;
import io.micronaut.core.annotation.Nullable;

import java.time.Duration;
import java.util.List;

/**
 * {@code idempotency.rabbitmq.consumers.<name>.*}: one idempotent consumer (CONTRACT M4, M6). Its
 * handler is the application's bean named {@code <name>} ({@code @Named("<name>")}) implementing
 * {@code MessageHandler}, or {@code TransactionalMessageHandler} when {@code transactional}. For
 * its queue {@code Q} the module declares {@code Q} (bound to {@code exchange} with each of
 * {@code routing-keys}), {@code Q.retry}, where a message waits out its delay before the module
 * moves it back to {@code Q}, and the fanout exchange {@code Q.dlx} with the queue {@code Q.dead}
 * for the messages given up on, each with its reason in {@code x-idempotency-dead-letter-reason}.
 */
@EachProperty(RabbitConfigurationProperties.PREFIX + ".consumers")
public class RabbitConsumerConfiguration {

    private final String name;
    private String queue;
    @Nullable
    private String exchange;
    private List<String> routingKeys = List.of("#");
    private int prefetch = 20;
    private int concurrency = 1;
    private boolean transactional;
    private int maxAttempts = ConsumerSettings.DEFAULT_MAX_ATTEMPTS;
    private Duration retryDelay = ConsumerSettings.DEFAULT_RETRY_DELAY;
    private Duration retryDelayMax = ConsumerSettings.DEFAULT_RETRY_DELAY_MAX;
    private Duration inProgressDelay = ConsumerSettings.DEFAULT_IN_PROGRESS_DELAY;
    private Duration lease = ConsumerSettings.DEFAULT_LEASE;
    private Duration retention = ConsumerSettings.DEFAULT_RETENTION;

    public RabbitConsumerConfiguration(@Parameter String name) {
        this.name = name;
        this.queue = name;
    }

    private String setting(String s) {
        return RabbitConfigurationProperties.PREFIX + ".consumers." + name + "." + s;
    }

    /** @return the consumer's name, which is also its handler bean's name */
    public String getName() {
        return name;
    }

    public String getQueue() {
        return queue;
    }

    /**
     * The queue it consumes. Default: the consumer's name.
     *
     * @param queue a queue name, not blank
     */
    public void setQueue(String queue) {
        if (queue == null || queue.isBlank()) {
            throw new IllegalArgumentException(setting("queue") + " must name a queue");
        }
        this.queue = queue;
    }

    @Nullable
    public String getExchange() {
        return exchange;
    }

    /**
     * The exchange its queue is bound to. The module declares it, as a durable topic exchange
     * unless {@code idempotency.rabbitmq.exchanges.<name>.type} says otherwise. Default: none,
     * the queue receives what is sent to it by name.
     *
     * @param exchange an exchange name
     */
    public void setExchange(@Nullable String exchange) {
        this.exchange = exchange;
    }

    public List<String> getRoutingKeys() {
        return routingKeys;
    }

    /**
     * The binding keys of the queue to {@code exchange}. Default {@code #} (everything, on a
     * topic exchange).
     *
     * @param routingKeys at least one key
     */
    public void setRoutingKeys(List<String> routingKeys) {
        if (routingKeys == null || routingKeys.isEmpty()) {
            throw new IllegalArgumentException(setting("routing-keys") + " needs at least one key");
        }
        this.routingKeys = List.copyOf(routingKeys);
    }

    public int getPrefetch() {
        return prefetch;
    }

    /**
     * How many unacknowledged deliveries the broker hands each of the consumer's channels at
     * once. Default 20.
     *
     * @param prefetch at least 1
     */
    public void setPrefetch(int prefetch) {
        this.prefetch = Checks.atLeast(prefetch, 1, setting("prefetch"));
    }

    public int getConcurrency() {
        return concurrency;
    }

    /**
     * How many channels (each with its own {@code prefetch}) consume the queue in this instance.
     * Default 1.
     *
     * @param concurrency at least 1
     */
    public void setConcurrency(int concurrency) {
        this.concurrency = Checks.atLeast(concurrency, 1, setting("concurrency"));
    }

    public boolean isTransactional() {
        return transactional;
    }

    /**
     * Whether the handler runs in the idempotency store's database transaction, with the message
     * id recorded in it (the inbox; PostgreSQL store only; the handler bean is then a
     * {@code TransactionalMessageHandler}). Default false.
     *
     * @param transactional whether the consumer is transactional
     */
    public void setTransactional(boolean transactional) {
        this.transactional = transactional;
    }

    public int getMaxAttempts() {
        return maxAttempts;
    }

    /**
     * How many times the handler may fail on one message before it is dead-lettered. Default
     * {@value dev.idempotency.messaging.ConsumerSettings#DEFAULT_MAX_ATTEMPTS}.
     *
     * @param maxAttempts at least 1
     */
    public void setMaxAttempts(int maxAttempts) {
        this.maxAttempts = Checks.atLeast(maxAttempts, 1, setting("max-attempts"));
    }

    public Duration getRetryDelayMax() {
        return retryDelayMax;
    }

    /**
     * The longest wait before a failed message comes back: the wait is {@code retry-delay} after
     * the first failure and doubles after each further one, up to this; at or below
     * {@code retry-delay}, every retry waits {@code retry-delay}. Default 30s.
     *
     * @param retryDelayMax more than zero
     */
    public void setRetryDelayMax(Duration retryDelayMax) {
        this.retryDelayMax = Checks.positive(retryDelayMax, setting("retry-delay-max"));
    }

    public Duration getRetryDelay() {
        return retryDelay;
    }

    /**
     * How long a message whose handler failed once waits in the retry queue; each further failure
     * doubles the wait, up to {@code retry-delay-max}. Default 5s.
     *
     * @param retryDelay more than zero
     */
    public void setRetryDelay(Duration retryDelay) {
        this.retryDelay = Checks.positive(retryDelay, setting("retry-delay"));
    }

    public Duration getInProgressDelay() {
        return inProgressDelay;
    }

    /**
     * How long a message waits in the retry queue when its id is being processed elsewhere or the
     * store did not answer. Default 2s.
     *
     * @param inProgressDelay more than zero
     */
    public void setInProgressDelay(Duration inProgressDelay) {
        this.inProgressDelay = Checks.positive(inProgressDelay, setting("in-progress-delay"));
    }

    public Duration getLease() {
        return lease;
    }

    /**
     * How long a delivery holds its message id while the handler runs (renewed while it runs).
     * Default 30s.
     *
     * @param lease more than zero
     */
    public void setLease(Duration lease) {
        this.lease = Checks.positive(lease, setting("lease"));
    }

    public Duration getRetention() {
        return retention;
    }

    /**
     * How long a processed message id is remembered: the de-duplication window. It must outlast
     * the longest way a message can come back, a replay from the dead-letter queue by hand
     * included. Default 7d.
     *
     * @param retention more than zero
     */
    public void setRetention(Duration retention) {
        this.retention = Checks.positive(retention, setting("retention"));
    }

    /** @return the broker-neutral settings of this consumer */
    public ConsumerSettings settings() {
        return new ConsumerSettings(name, lease, retention, maxAttempts, retryDelay, inProgressDelay, transactional,
            retryDelayMax);
    }
}
