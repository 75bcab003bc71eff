package dev.idempotency.rabbitmq;

import com.rabbitmq.client.AMQP;
import com.rabbitmq.client.BuiltinExchangeType;
import com.rabbitmq.client.Channel;
import com.rabbitmq.client.DefaultConsumer;
import com.rabbitmq.client.Envelope;
import dev.idempotency.messaging.Disposition;
import dev.idempotency.messaging.IdempotentConsumer;
import dev.idempotency.messaging.IdempotentConsumers;
import dev.idempotency.messaging.MessageHandler;
import dev.idempotency.messaging.ReceivedMessage;
import dev.idempotency.messaging.TransactionalMessageHandler;
import io.micronaut.context.annotation.Requires;
import io.micronaut.context.event.StartupEvent;
import io.micronaut.runtime.event.annotation.EventListener;
import jakarta.annotation.PreDestroy;
import jakarta.inject.Singleton;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import java.io.IOException;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;

/**
 * Runs the configured consumers ({@code idempotency.rabbitmq.consumers.<name>}, CONTRACT M4-M6):
 * declares their topology (see {@link RabbitConsumerConfiguration}), and consumes each queue with
 * manual acknowledgements and the configured prefetch, on {@code concurrency} channels. Each
 * delivery goes through an {@link IdempotentConsumer} on the application's idempotency store,
 * and its disposition is carried out only after the outcome is stored:
 * <ul>
 *   <li>acknowledge;</li>
 *   <li>retry: a copy goes to {@code Q.retry} with the time it may come back in
 *       {@value #NOT_BEFORE_HEADER} and {@value #ATTEMPT_HEADER} counting the handler's failures;
 *       once the broker confirmed the copy, the delivery is acknowledged (if the copy cannot be
 *       published, the delivery is returned to the queue instead: nothing is lost, at worst it
 *       comes back sooner). The module's mover consumes {@code Q.retry} and republishes each
 *       message to {@code Q} when its time has come;</li>
 *   <li>dead-letter: a copy goes to {@code Q.dlx} with the reason in
 *       {@value #REASON_HEADER}, then the delivery is acknowledged.</li>
 * </ul>
 * A delivery without a message id is dead-lettered: without one, duplicates cannot be told.
 * Consumers start with the application and re-attach by themselves after the connection is
 * recovered; one whose broker is down at startup is tried again every
 * {@code recovery-interval}.
 */
@Singleton
@Requires(property = RabbitConfigurationProperties.PREFIX + ".enabled", notEquals = "false")
public final class RabbitConsumers implements AutoCloseable {

    /** The header counting how many times a message's handler failed. */
    public static final String ATTEMPT_HEADER = "x-idempotency-attempt";
    /** The header with the reason a message was dead-lettered. */
    public static final String REASON_HEADER = "x-idempotency-dead-letter-reason";
    /** The header of a message in the retry queue: when (epoch milliseconds) it goes back to its queue. */
    public static final String NOT_BEFORE_HEADER = "x-idempotency-not-before";

    /** How many waiting messages a retry queue's mover holds at once (they wait in order). */
    private static final int RETRY_PREFETCH = 100;

    private static final Logger LOG = LoggerFactory.getLogger(RabbitConsumers.class);

    private final RabbitConnection connection;
    private final RabbitConfigurationProperties config;
    private final List<RabbitConsumerConfiguration> consumers;
    private final List<RabbitExchangeConfiguration> exchanges;
    private final IdempotentConsumers factory;
    private final List<ConfirmingChannel> channels = new ArrayList<>();
    private final Map<String, Runnable> pending = new HashMap<>(); // consumers waiting for the broker, guarded by this
    private boolean closed; // guarded by this
    private java.util.concurrent.ScheduledExecutorService retryTimer; // guarded by this

    RabbitConsumers(RabbitConnection connection, RabbitConfigurationProperties config,
                    List<RabbitConsumerConfiguration> consumers, List<RabbitExchangeConfiguration> exchanges,
                    IdempotentConsumers factory) {
        this.connection = connection;
        this.config = config;
        this.consumers = consumers;
        this.exchanges = exchanges;
        this.factory = factory;
    }

    @EventListener
    void onStartup(StartupEvent event) {
        for (RabbitConsumerConfiguration c : consumers) {
            factory.handler(c.settings(), "queue " + c.getQueue()); // a missing handler bean fails the startup
            startLater(c);
        }
    }

    /** Starts {@code c}'s channels now, or keeps trying every recovery-interval until the broker answers. */
    private synchronized void startLater(RabbitConsumerConfiguration c) {
        if (closed) {
            return;
        }
        Runnable attempt = new Runnable() {
            @Override
            public void run() {
                synchronized (RabbitConsumers.this) {
                    if (closed) {
                        return;
                    }
                    try {
                        start(c);
                        pending.remove(c.getName());
                    } catch (IOException | RuntimeException e) {
                        if (pending.put(c.getName(), this) == null) {
                            LOG.warn("idempotency consumer '{}' cannot start on RabbitMQ at {}: {}; trying again every {}",
                                c.getName(), connection.where(), describe(e), config.getRecoveryInterval());
                        }
                        timer().schedule(this, config.getRecoveryInterval().toMillis(),
                            java.util.concurrent.TimeUnit.MILLISECONDS);
                    }
                }
            }
        };
        attempt.run();
    }

    private java.util.concurrent.ScheduledExecutorService timer() {
        if (retryTimer == null) {
            retryTimer = java.util.concurrent.Executors.newSingleThreadScheduledExecutor(r -> {
                Thread t = new Thread(r, "idempotency-rabbitmq-start");
                t.setDaemon(true);
                return t;
            });
        }
        return retryTimer;
    }

    // guarded by this
    private void start(RabbitConsumerConfiguration c) throws IOException {
        IdempotentConsumer consumer = factory.consumer(c.settings());
        Object handler = factory.handler(c.settings(), "queue " + c.getQueue());
        List<ConfirmingChannel> opened = new ArrayList<>();
        try {
            for (int i = 0; i < c.getConcurrency(); i++) {
                ConfirmingChannel ch = new ConfirmingChannel(connection.get().createChannel(),
                    "idempotency-consumer-" + c.getName() + "-" + (i + 1));
                opened.add(ch);
                declare(ch.channel(), c);
                ch.channel().basicQos(c.getPrefetch());
                ch.channel().basicConsume(c.getQueue(), false, "idempotency-" + c.getName() + "-" + (i + 1),
                    new Delivery(ch, c, consumer, handler));
            }
            ConfirmingChannel mover = new ConfirmingChannel(connection.get().createChannel(),
                "idempotency-consumer-" + c.getName() + "-retry");
            opened.add(mover);
            mover.channel().basicQos(RETRY_PREFETCH);
            mover.channel().basicConsume(c.getQueue() + ".retry", false, "idempotency-" + c.getName() + "-retry",
                new RetryMover(mover, c));
        } catch (IOException | RuntimeException e) {
            opened.forEach(ConfirmingChannel::close);
            throw e;
        }
        channels.addAll(opened);
        LOG.info("idempotency consumer '{}' consumes {} on {} channel(s), prefetch {}", c.getName(), c.getQueue(),
            c.getConcurrency(), c.getPrefetch());
    }

    /** The queue, its retry queue, its dead-letter exchange and queue, and its bindings. */
    private void declare(Channel ch, RabbitConsumerConfiguration c) throws IOException {
        boolean declared = false;
        for (RabbitExchangeConfiguration e : exchanges) {
            ch.exchangeDeclare(e.getName(), BuiltinExchangeType.valueOf(e.getType().toUpperCase(java.util.Locale.ROOT)),
                true);
            declared |= e.getName().equals(c.getExchange());
        }
        if (c.getExchange() != null && !declared && !c.getExchange().isEmpty()) {
            ch.exchangeDeclare(c.getExchange(), BuiltinExchangeType.TOPIC, true); // a durable topic, unless configured
        }
        String q = c.getQueue();
        ch.exchangeDeclare(q + ".dlx", BuiltinExchangeType.FANOUT, true);
        ch.queueDeclare(q + ".dead", true, false, false, null);
        ch.queueBind(q + ".dead", q + ".dlx", "");
        ch.queueDeclare(q, true, false, false, null);
        ch.queueDeclare(q + ".retry", true, false, false, null);
        if (c.getExchange() != null) {
            for (String key : c.getRoutingKeys()) {
                ch.queueBind(q, c.getExchange(), key);
            }
        }
    }

    /** One channel's deliveries. */
    private final class Delivery extends DefaultConsumer {
        private final ConfirmingChannel ch;
        private final RabbitConsumerConfiguration config;
        private final IdempotentConsumer consumer;
        private final Object handler;

        Delivery(ConfirmingChannel ch, RabbitConsumerConfiguration config, IdempotentConsumer consumer, Object handler) {
            super(ch.channel());
            this.ch = ch;
            this.config = config;
            this.consumer = consumer;
            this.handler = handler;
        }

        @Override
        public void handleDelivery(String tag, Envelope envelope, AMQP.BasicProperties props, byte[] body) {
            long deliveryTag = envelope.getDeliveryTag();
            Map<String, Object> headers = props.getHeaders() == null ? Map.of() : props.getHeaders();
            int attempt = attemptOf(headers);
            String id = props.getMessageId();
            CompletionStage<Disposition> decided;
            if (id == null || id.isBlank()) {
                decided = CompletableFuture.completedFuture(new Disposition.DeadLetter(
                    "the message has no message-id: duplicates of it cannot be told apart; set the message-id property"));
            } else {
                ReceivedMessage message = new ReceivedMessage(id, body, props.getContentType(), headers, config.getQueue(),
                    envelope.getRoutingKey(), envelope.isRedeliver(), attempt);
                try {
                    decided = handler instanceof TransactionalMessageHandler t ? consumer.process(message, t)
                        : consumer.process(message, (MessageHandler) handler);
                } catch (RuntimeException e) {
                    decided = CompletableFuture.failedFuture(e);
                }
            }
            decided.whenComplete((d, failure) -> {
                Disposition disposition = failure != null
                    ? new Disposition.Retry(config.getInProgressDelay(), failure.toString(), false,
                        dev.idempotency.messaging.DeliveryOutcome.REQUEUED)
                    : d;
                carryOut(disposition, deliveryTag, props, headers, attempt, body);
            });
        }

        private void carryOut(Disposition d, long deliveryTag, AMQP.BasicProperties props, Map<String, Object> headers,
                              int attempt, byte[] body) {
            String q = config.getQueue();
            CompletableFuture<Void> copied;
            if (d instanceof Disposition.Retry r) {
                Map<String, Object> h = new HashMap<>(headers);
                h.put(ATTEMPT_HEADER, attempt + (r.counted() ? 1 : 0));
                h.put(NOT_BEFORE_HEADER, System.currentTimeMillis() + r.delay().toMillis());
                copied = ch.publish("", q + ".retry", false, props.builder().headers(h).build(), body);
            } else if (d instanceof Disposition.DeadLetter dl) {
                Map<String, Object> h = new HashMap<>(headers);
                h.put(ATTEMPT_HEADER, attempt);
                h.put(REASON_HEADER, dl.reason());
                copied = ch.publish(q + ".dlx", q, false, props.builder().headers(h).build(), body);
            } else {
                copied = CompletableFuture.completedFuture(null);
            }
            copied.whenComplete((v, failure) -> ch.run(channel -> {
                if (failure == null) {
                    channel.basicAck(deliveryTag, false);
                } else {
                    LOG.warn("idempotency consumer '{}': could not move a message to {} ({}); returning it to {}",
                        config.getName(), d instanceof Disposition.Retry ? q + ".retry" : q + ".dlx", failure.toString(), q);
                    channel.basicNack(deliveryTag, false, true);
                }
                return null;
            }).exceptionally(e -> {
                // the channel went down: the broker delivers the message again, the consumer de-duplicates
                LOG.debug("idempotency consumer '{}': delivery {} not settled: {}", config.getName(), deliveryTag, e.toString());
                return null;
            }));
        }
    }

    /**
     * Moves messages from {@code Q.retry} back to {@code Q} once their time has come: each stays
     * unacknowledged in {@code Q.retry} until its copy in {@code Q} is confirmed, so a crash in
     * between leaves it waiting there, never lost. Plain AMQP 0-9-1: no broker-specific
     * dead-lettering or message TTL is needed.
     */
    private final class RetryMover extends DefaultConsumer {
        private final ConfirmingChannel ch;
        private final RabbitConsumerConfiguration config;

        RetryMover(ConfirmingChannel ch, RabbitConsumerConfiguration config) {
            super(ch.channel());
            this.ch = ch;
            this.config = config;
        }

        @Override
        public void handleDelivery(String tag, Envelope envelope, AMQP.BasicProperties props, byte[] body) {
            long deliveryTag = envelope.getDeliveryTag();
            Map<String, Object> headers = props.getHeaders() == null ? new HashMap<>() : new HashMap<>(props.getHeaders());
            Object nb = headers.remove(NOT_BEFORE_HEADER);
            long wait = nb instanceof Number n ? n.longValue() - System.currentTimeMillis() : 0;
            Runnable move = () -> ch.publish("", config.getQueue(), false, props.builder().headers(headers).build(), body)
                .whenComplete((v, failure) -> ch.run(channel -> {
                    if (failure == null) {
                        channel.basicAck(deliveryTag, false);
                    } else {
                        channel.basicNack(deliveryTag, false, true); // it stays in the retry queue
                    }
                    return null;
                }));
            if (wait <= 0) {
                move.run();
            } else {
                synchronized (RabbitConsumers.this) {
                    if (!closed) {
                        timer().schedule(move, wait, java.util.concurrent.TimeUnit.MILLISECONDS);
                    }
                }
            }
        }
    }

    /** @return the failure and its causes' messages, e.g. the broker's reply to a declaration it refused */
    static String describe(Throwable e) {
        StringBuilder sb = new StringBuilder();
        for (Throwable t = e; t != null && sb.length() < 500; t = t.getCause() == t ? null : t.getCause()) {
            if (sb.length() > 0) {
                sb.append(" <- ");
            }
            sb.append(t.getClass().getSimpleName());
            if (t.getMessage() != null) {
                sb.append(": ").append(t.getMessage());
            }
        }
        return sb.toString();
    }

    private static int attemptOf(Map<String, Object> headers) {
        Object a = headers.get(ATTEMPT_HEADER);
        if (a instanceof Number n) {
            return Math.max(0, n.intValue());
        }
        if (a != null) {
            try {
                return Math.max(0, Integer.parseInt(a.toString()));
            } catch (NumberFormatException e) {
                return 0;
            }
        }
        return 0;
    }

    /** Stops consuming; deliveries not acknowledged yet go back to their queues. */
    @PreDestroy
    @Override
    public synchronized void close() {
        closed = true;
        if (retryTimer != null) {
            retryTimer.shutdownNow();
        }
        channels.forEach(ConfirmingChannel::close);
        channels.clear();
    }
}
