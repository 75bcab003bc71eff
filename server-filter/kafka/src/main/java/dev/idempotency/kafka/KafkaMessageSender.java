package dev.idempotency.kafka;

import dev.idempotency.messaging.MessageSender;
import dev.idempotency.messaging.OutboxRecord;
import io.micronaut.context.annotation.Requires;
import jakarta.annotation.PreDestroy;
import jakarta.inject.Singleton;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.KafkaFuture;
import org.apache.kafka.common.errors.RetriableException;
import org.apache.kafka.common.errors.UnknownTopicOrPartitionException;
import org.apache.kafka.common.header.internals.RecordHeaders;

import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;

/**
 * The outbox relay's sender on Kafka (CONTRACT M3, M8): one idempotent producer
 * ({@code enable.idempotence}, {@code acks=all}), so the producer's own retries neither reorder
 * nor duplicate a partition's records. Each message goes to the topic named by its destination,
 * with its ordering key as the record key (one key, one partition: per-key order holds), its id in
 * {@value KafkaHeaders#MESSAGE_ID} and its headers as record headers. A batch is handed to the
 * producer whole and waited for once: a message counts as sent when the cluster acknowledged it.
 * <ul>
 *   <li>A topic that does not exist (the module never creates the application's topics) or a
 *       record the cluster refuses (too large, not authorized) is reported as refused: the relay
 *       retries it and eventually parks it, without holding back other keys.</li>
 *   <li>A cluster that cannot be reached fails the whole batch (no message's attempts count):
 *       the relay waits and sends again. A batch the cluster took but did not acknowledge in time
 *       may be sent twice; consumers de-duplicate by the message id.</li>
 * </ul>
 */
@Singleton
@Requires(property = KafkaConfigurationProperties.PREFIX + ".enabled", notEquals = "false")
final class KafkaMessageSender implements MessageSender, AutoCloseable {

    private final KafkaClients clients;
    private final Set<String> knownTopics = ConcurrentHashMap.newKeySet();
    private KafkaProducer<byte[], byte[]> producer; // guarded by this
    private Admin admin; // guarded by this

    KafkaMessageSender(KafkaClients clients) {
        this.clients = clients;
    }

    @Override
    public CompletionStage<List<String>> send(List<OutboxRecord> messages) {
        KafkaProducer<byte[], byte[]> p;
        Set<String> missing;
        try {
            p = producer();
            missing = missingTopics(messages);
        } catch (TimeoutException e) {
            return CompletableFuture.failedFuture(new TimeoutException("Kafka at "
                + clients.config().getBootstrapServers() + " did not answer within " + clients.config().getRequestTimeout()));
        } catch (ExecutionException | RuntimeException e) {
            return CompletableFuture.failedFuture(e instanceof ExecutionException ? e.getCause() : e);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            return CompletableFuture.failedFuture(e);
        }
        List<CompletableFuture<Throwable>> sends = new ArrayList<>(messages.size());
        List<String> refusals = new ArrayList<>(messages.size());
        for (OutboxRecord m : messages) {
            if (m.destination().isEmpty()) {
                refusals.add("a Kafka message needs its topic as the destination, and this one has none");
                sends.add(CompletableFuture.completedFuture(null));
            } else if (missing.contains(m.destination())) {
                refusals.add("the topic '" + m.destination() + "' does not exist on " + clients.config().getBootstrapServers()
                    + ": create it (the module does not create the application's topics)");
                sends.add(CompletableFuture.completedFuture(null));
            } else {
                refusals.add(null);
                sends.add(send(p, m));
            }
        }
        return CompletableFuture.allOf(sends.toArray(CompletableFuture[]::new)).thenApply(v -> {
            List<String> outcomes = new ArrayList<>(messages.size());
            int sent = 0;
            int unreachable = 0;
            for (int i = 0; i < messages.size(); i++) {
                Throwable failure = sends.get(i).join();
                if (refusals.get(i) != null) {
                    outcomes.add(refusals.get(i));
                } else if (failure == null) {
                    sent++;
                    outcomes.add(null);
                } else {
                    unreachable += failure instanceof RetriableException ? 1 : 0;
                    outcomes.add("not acknowledged: " + failure);
                }
            }
            if (sent == 0 && unreachable > 0 && unreachable == sends.size()) {
                // nothing got through, and only for want of the cluster: a failure of the batch, not of its messages
                throw new CompletionException(new TimeoutException("Kafka at " + clients.config().getBootstrapServers()
                    + " acknowledged none of " + messages.size() + " messages: " + sends.get(0).join()));
            }
            return outcomes;
        });
    }

    /** @return completes with {@code null} once acknowledged, else with the failure; never fails */
    private static CompletableFuture<Throwable> send(KafkaProducer<byte[], byte[]> p, OutboxRecord m) {
        RecordHeaders headers = new RecordHeaders();
        for (Map.Entry<String, String> h : m.headers().entrySet()) {
            headers.add(h.getKey(), h.getValue().getBytes(StandardCharsets.UTF_8));
        }
        headers.add(KafkaHeaders.MESSAGE_ID, m.messageId().getBytes(StandardCharsets.UTF_8));
        headers.add(KafkaHeaders.CONTENT_TYPE, m.contentType().getBytes(StandardCharsets.UTF_8));
        if (!m.routingKey().isEmpty()) {
            headers.add(KafkaHeaders.ROUTING_KEY, m.routingKey().getBytes(StandardCharsets.UTF_8));
        }
        ProducerRecord<byte[], byte[]> record = new ProducerRecord<>(m.destination(), null, m.createdAt().toEpochMilli(),
            m.orderingKey().getBytes(StandardCharsets.UTF_8), m.body(), headers);
        CompletableFuture<Throwable> done = new CompletableFuture<>();
        try {
            p.send(record, (metadata, failure) -> done.complete(failure));
        } catch (RuntimeException e) {
            done.complete(e); // e.g. a record larger than the producer allows, or metadata not there in time
        }
        return done;
    }

    /** The destinations of {@code messages} the cluster says do not exist (an existing topic is remembered). */
    private Set<String> missingTopics(List<OutboxRecord> messages)
        throws ExecutionException, InterruptedException, TimeoutException {
        Set<String> unknown = new HashSet<>();
        for (OutboxRecord m : messages) {
            if (!m.destination().isEmpty() && !knownTopics.contains(m.destination())) {
                unknown.add(m.destination());
            }
        }
        if (unknown.isEmpty()) {
            return Set.of();
        }
        Map<String, KafkaFuture<org.apache.kafka.clients.admin.TopicDescription>> described =
            admin().describeTopics(unknown).topicNameValues();
        Set<String> missing = new HashSet<>();
        Duration timeout = clients.config().getRequestTimeout();
        for (Map.Entry<String, KafkaFuture<org.apache.kafka.clients.admin.TopicDescription>> e : described.entrySet()) {
            try {
                e.getValue().get(timeout.toMillis(), TimeUnit.MILLISECONDS);
                knownTopics.add(e.getKey());
            } catch (ExecutionException x) {
                if (x.getCause() instanceof UnknownTopicOrPartitionException) {
                    missing.add(e.getKey());
                } else {
                    throw x;
                }
            }
        }
        return missing;
    }

    private synchronized KafkaProducer<byte[], byte[]> producer() {
        if (producer == null) {
            producer = clients.producer("outbox");
        }
        return producer;
    }

    private synchronized Admin admin() {
        if (admin == null) {
            admin = clients.admin("outbox-admin");
        }
        return admin;
    }

    @PreDestroy
    @Override
    public synchronized void close() {
        if (producer != null) {
            producer.close(Duration.ofSeconds(2));
            producer = null;
        }
        if (admin != null) {
            admin.close(Duration.ofSeconds(1));
            admin = null;
        }
    }
}
