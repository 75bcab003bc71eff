package dev.idempotency.kafka;

import dev.idempotency.messaging.IdempotentConsumer;
import dev.idempotency.messaging.IdempotentConsumers;
import io.micronaut.context.annotation.Requires;
import io.micronaut.context.event.StartupEvent;
import io.micronaut.runtime.event.annotation.EventListener;
import jakarta.annotation.PreDestroy;
import jakarta.inject.Singleton;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.NewTopic;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.common.errors.TopicExistsException;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Optional;
import java.util.Set;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;

/**
 * Runs the configured consumers ({@code idempotency.kafka.consumers.<name>}, CONTRACT M4, M8): for
 * each, {@code concurrency} Kafka consumers in its group, each on a thread of its own, every record
 * through an {@link IdempotentConsumer} on the application's idempotency store (see
 * {@code PartitionConsumer} for commits, waits and rebalances). Records given up on go to the
 * dead-letter topic through one idempotent producer the consumers share.
 *
 * <p>A missing handler bean fails the startup. A cluster that is down at startup does not: the
 * Kafka client keeps trying, and consumption starts when the cluster answers.
 */
@Singleton
@Requires(property = KafkaConfigurationProperties.PREFIX + ".enabled", notEquals = "false")
public final class KafkaConsumers implements AutoCloseable {

    private static final Logger LOG = LoggerFactory.getLogger(KafkaConsumers.class);

    private final KafkaClients clients;
    private final List<KafkaConsumerConfiguration> consumers;
    private final IdempotentConsumers factory;
    private final List<PartitionConsumer> loops = new ArrayList<>(); // guarded by this
    private KafkaProducer<byte[], byte[]> deadLetters; // guarded by this
    private boolean closed; // guarded by this

    KafkaConsumers(KafkaClients clients, List<KafkaConsumerConfiguration> consumers, IdempotentConsumers factory) {
        this.clients = clients;
        this.consumers = consumers;
        this.factory = factory;
    }

    @EventListener
    void onStartup(StartupEvent event) {
        for (KafkaConsumerConfiguration c : consumers) {
            factory.handler(c.settings(), "topics " + c.getTopics()); // a missing handler bean fails the startup
        }
        for (KafkaConsumerConfiguration c : consumers) {
            start(c);
        }
    }

    /** Starts {@code c}'s consumers (they join the group when the cluster answers). */
    synchronized void start(KafkaConsumerConfiguration c) {
        if (closed) {
            return;
        }
        if (c.isCreateDeadLetterTopics()) {
            createDeadLetterTopics(c);
        }
        IdempotentConsumer consumer = factory.consumer(c.settings());
        Object handler = factory.handler(c.settings(), "topics " + c.getTopics());
        if (deadLetters == null) {
            deadLetters = clients.producer("dead-letters");
        }
        for (int i = 0; i < c.getConcurrency(); i++) {
            PartitionConsumer loop = new PartitionConsumer(c, clients.consumer(c, i + 1), deadLetters, consumer, handler);
            Thread t = new Thread(loop, "idempotency-kafka-" + c.getName() + "-" + (i + 1));
            t.setDaemon(true);
            t.start();
            loops.add(loop);
        }
        LOG.info("idempotency consumer '{}' consumes {} in group {} with {} consumer(s)", c.getName(), c.getTopics(),
            c.getGroupId(), c.getConcurrency());
    }

    private void createDeadLetterTopics(KafkaConsumerConfiguration c) {
        Set<String> topics = new LinkedHashSet<>();
        c.getTopics().forEach(t -> topics.add(c.deadLetterTopicOf(t)));
        try (Admin admin = clients.admin("consumer-" + c.getName() + "-admin")) {
            for (String topic : topics) {
                try {
                    admin.createTopics(List.of(new NewTopic(topic, Optional.of(1), Optional.empty()))).all()
                        .get(clients.config().getRequestTimeout().toMillis() * 2, TimeUnit.MILLISECONDS);
                    LOG.info("idempotency consumer '{}': created the dead-letter topic {}", c.getName(), topic);
                } catch (ExecutionException e) {
                    if (!(e.getCause() instanceof TopicExistsException)) {
                        LOG.warn("idempotency consumer '{}': could not create the dead-letter topic {}: {}; records given"
                            + " up on wait (their partition paused) until it exists", c.getName(), topic, e.getCause().toString());
                    }
                } catch (java.util.concurrent.TimeoutException e) {
                    LOG.warn("idempotency consumer '{}': Kafka at {} did not answer; the dead-letter topic {} is not"
                        + " checked (records given up on wait until it exists)", c.getName(),
                        clients.config().getBootstrapServers(), topic);
                    return;
                }
            }
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }

    /** Stops consuming: records in flight finish (up to each consumer's revoke-timeout), offsets are committed. */
    @PreDestroy
    @Override
    public synchronized void close() {
        closed = true;
        loops.forEach(l -> l.close(Duration.ofSeconds(5)));
        loops.clear();
        if (deadLetters != null) {
            deadLetters.close(Duration.ofSeconds(2));
            deadLetters = null;
        }
    }
}
