package dev.idempotency.kafka;

import dev.idempotency.messaging.MessageHandler;
import dev.idempotency.messaging.ReceivedMessage;
import dev.idempotency.messaging.UnreadableMessageException;
import dev.idempotency.testsupport.Await;
import dev.idempotency.testsupport.Stores;
import dev.idempotency.testsupport.TestKafka;
import io.micronaut.context.ApplicationContext;
import io.micronaut.context.annotation.Requires;
import io.micronaut.context.exceptions.ConfigurationException;
import jakarta.inject.Named;
import jakarta.inject.Singleton;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.DisplayName;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;

import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.atomic.AtomicInteger;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/**
 * Idempotent consumers on a real Kafka (CONTRACT M4, M8), on each idempotency store: duplicates,
 * a failing record that holds back its partition and is dead-lettered to a topic with the reason,
 * a record that cannot be read, one without a message id, and offsets committed only past stored
 * outcomes. The cluster is the configured one, else an embedded KRaft broker.
 */
class ConsumerOnKafkaTest {

    static final String SPEC = "ConsumerOnKafkaTest";
    /** Bodies in the order the handler ran them. */
    static final List<String> RUNS = new CopyOnWriteArrayList<>();
    static final Map<String, AtomicInteger> FAILURES = new ConcurrentHashMap<>();
    /** Each body's record key and partition, as the handler saw them. */
    static final Map<String, String> WHERE = new ConcurrentHashMap<>();

    @Singleton
    @Named("ledger")
    @Requires(property = "spec.name", value = SPEC)
    static class Ledger implements MessageHandler {
        @Override
        public CompletableFuture<Void> handle(ReceivedMessage message) {
            String body = message.bodyText();
            RUNS.add(body);
            WHERE.put(body, message.key() + "@" + message.partition());
            if (body.startsWith("poison")) {
                return CompletableFuture.failedFuture(new IllegalArgumentException("cannot book " + body));
            }
            if (body.startsWith("garbled")) {
                throw new UnreadableMessageException("not JSON: " + body);
            }
            if (body.startsWith("flaky") && FAILURES.computeIfAbsent(body, k -> new AtomicInteger()).incrementAndGet() < 3) {
                return CompletableFuture.failedFuture(new IllegalStateException("the ledger is busy"));
            }
            return CompletableFuture.completedFuture(null);
        }
    }

    private static Topics topics;
    private final String topic = Topics.unique("ledger");
    private final List<ApplicationContext> contexts = new ArrayList<>();

    @BeforeAll
    static void cluster() {
        topics = new Topics(TestKafka.bootstrapServers());
    }

    @AfterAll
    static void closeCluster() {
        topics.close();
    }

    @AfterEach
    void cleanUp() {
        contexts.forEach(ApplicationContext::close);
        Stores.removeCreated();
        RUNS.clear();
    }

    private ApplicationContext consumer(Stores store, Map<String, Object> extra) {
        Map<String, Object> p = new HashMap<>(store.properties());
        p.put("spec.name", SPEC);
        p.put("idempotency.kafka.bootstrap-servers", topics.bootstrap);
        p.put("idempotency.kafka.consumers.ledger.topics", topic);
        p.put("idempotency.kafka.consumers.ledger.group-id", topic);
        p.put("idempotency.kafka.consumers.ledger.retry-delay", "100ms");
        p.put("idempotency.kafka.consumers.ledger.in-progress-delay", "100ms");
        p.put("idempotency.kafka.consumers.ledger.max-attempts", "3");
        p.put("idempotency.outbox.enabled", "false");
        p.putAll(extra);
        ApplicationContext ctx = ApplicationContext.run(p);
        contexts.add(ctx);
        return ctx;
    }

    private static long runs(String body) {
        return RUNS.stream().filter(body::equals).count();
    }

    @ParameterizedTest(name = "M8: {0}: a record delivered twice runs once, and the offset moves past both")
    @EnumSource(Stores.class)
    void deliveredTwice(Stores store) throws Exception {
        topics.create(1, topic);
        consumer(store, Map.of());
        topics.send(topic, "k", "id-1", "twice");
        topics.send(topic, "k", "id-1", "twice");
        topics.send(topic, "k", "id-2", "after");
        Await.until("the group committed past all three", () -> topics.committed(topic) == 3);
        assertThat(runs("twice")).isEqualTo(1);
        assertThat(runs("after")).isEqualTo(1);
    }

    @ParameterizedTest(name = "M8: {0}: the handler sees each record's key and partition")
    @EnumSource(Stores.class)
    void handlerSeesKeyAndPartition(Stores store) throws Exception {
        topics.create(3, topic);
        consumer(store, Map.of("idempotency.kafka.consumers.ledger.properties.session.timeout.ms", "10000",
            "idempotency.kafka.consumers.ledger.properties.heartbeat.interval.ms", "3000"));
        topics.send(topic, "order-1", "id-k1", "keyed-1-" + topic);
        topics.send(topic, "order-2", "id-k2", "keyed-2-" + topic);
        Await.until("both records handled", () -> WHERE.containsKey("keyed-1-" + topic) && WHERE.containsKey("keyed-2-" + topic));
        try (var probe = new org.apache.kafka.clients.consumer.KafkaConsumer<byte[], byte[]>(Map.of(
                "bootstrap.servers", topics.bootstrap, "group.id", Topics.unique("probe"), "auto.offset.reset", "earliest",
                "key.deserializer", org.apache.kafka.common.serialization.ByteArrayDeserializer.class,
                "value.deserializer", org.apache.kafka.common.serialization.ByteArrayDeserializer.class))) {
            probe.subscribe(List.of(topic));
            Map<String, String> expected = new HashMap<>();
            long deadline = System.nanoTime() + java.util.concurrent.TimeUnit.SECONDS.toNanos(20);
            while (expected.size() < 2 && System.nanoTime() < deadline) {
                probe.poll(java.time.Duration.ofMillis(200)).forEach(r -> expected.put(
                    new String(r.value(), java.nio.charset.StandardCharsets.UTF_8),
                    new String(r.key(), java.nio.charset.StandardCharsets.UTF_8) + "@" + r.partition()));
            }
            assertThat(WHERE).containsEntry("keyed-1-" + topic, expected.get("keyed-1-" + topic))
                .containsEntry("keyed-2-" + topic, expected.get("keyed-2-" + topic));
        }
        assertThat(WHERE.get("keyed-1-" + topic)).startsWith("order-1@");
    }

    @ParameterizedTest(name = "M8: {0}: a failing record holds back its partition, then goes to the dead-letter topic")
    @EnumSource(Stores.class)
    void poisonHoldsItsPartitionThenIsDeadLettered(Stores store) throws Exception {
        topics.create(1, topic);
        consumer(store, Map.of());
        topics.send(topic, "k", "id-p", "poison-1");
        topics.send(topic, "k", "id-f", "flaky-" + topic);
        topics.send(topic, "k", "id-a", "after-" + topic);
        List<ConsumerRecord<byte[], byte[]>> dead = topics.read(topic + ".dead", 1);
        Await.until("the group committed past all three", () -> topics.committed(topic) == 3);
        assertThat(dead).hasSize(1);
        ConsumerRecord<byte[], byte[]> d = dead.get(0);
        assertThat(Topics.text(d.value())).isEqualTo("poison-1");
        assertThat(Topics.text(d.key())).isEqualTo("k");
        assertThat(Topics.header(d, KafkaHeaders.MESSAGE_ID)).isEqualTo("id-p");
        assertThat(Topics.header(d, KafkaHeaders.DEAD_LETTER_REASON)).contains("failed 3 times", "cannot book poison-1");
        assertThat(Topics.header(d, KafkaHeaders.ORIGIN)).isEqualTo(topic + "-0@0");
        // never skipped: nothing behind the poison ran before it was given up on, and the flaky one ran 3 times
        assertThat(RUNS).containsExactly("poison-1", "poison-1", "poison-1", "flaky-" + topic, "flaky-" + topic,
            "flaky-" + topic, "after-" + topic);
    }

    @ParameterizedTest(name = "M8: {0}: a record that cannot be read is dead-lettered at once, with the reason")
    @EnumSource(Stores.class)
    void unreadableIsDeadLetteredAtOnce(Stores store) throws Exception {
        topics.create(1, topic);
        consumer(store, Map.of());
        topics.send(topic, "k", "id-g", "garbled{");
        topics.send(topic, "k", null, "no id");
        topics.send(topic, "k", "id-t", null);
        List<ConsumerRecord<byte[], byte[]>> dead = topics.read(topic + ".dead", 3);
        assertThat(dead).hasSize(3);
        assertThat(Topics.header(dead.get(0), KafkaHeaders.DEAD_LETTER_REASON)).isEqualTo(
            "the message cannot be read: not JSON: garbled{");
        assertThat(Topics.header(dead.get(1), KafkaHeaders.DEAD_LETTER_REASON)).contains("no " + KafkaHeaders.MESSAGE_ID);
        assertThat(Topics.header(dead.get(2), KafkaHeaders.DEAD_LETTER_REASON)).contains("tombstone");
        assertThat(runs("garbled{")).isEqualTo(1);
        Await.until("the group committed past all three", () -> topics.committed(topic) == 3);
    }

    @Test
    @DisplayName("M8: a consumer without its handler bean fails the startup, naming the bean to define")
    void missingHandler() {
        Map<String, Object> p = new HashMap<>(Stores.MEMORY.properties());
        p.put("idempotency.kafka.bootstrap-servers", topics.bootstrap);
        p.put("idempotency.kafka.consumers.nobody.topics", topic);
        p.put("idempotency.outbox.enabled", "false");
        assertThatThrownBy(() -> ApplicationContext.run(p).close())
            .isInstanceOf(ConfigurationException.class)
            .hasMessageContaining("define a bean @Named(\"nobody\") implementing MessageHandler");
    }

    @Test
    @DisplayName("M8: settings that contradict each other fail the startup, saying what to change")
    void contradictorySettings() {
        Map<String, Object> p = new HashMap<>(Stores.MEMORY.properties());
        p.put("idempotency.kafka.bootstrap-servers", topics.bootstrap);
        p.put("idempotency.kafka.delivery-timeout", "20s");
        assertThatThrownBy(() -> ApplicationContext.run(p).close())
            .hasRootCauseInstanceOf(ConfigurationException.class)
            .rootCause().hasMessageContaining("must be shorter than idempotency.outbox.send-timeout (PT10S)");
        Map<String, Object> q = new HashMap<>(Stores.MEMORY.properties());
        q.put("idempotency.kafka.properties.acks", "1");
        assertThatThrownBy(() -> ApplicationContext.run(q).close())
            .hasStackTraceContaining("idempotency.kafka.properties.acks cannot be set");
        Map<String, Object> r = new HashMap<>(Stores.MEMORY.properties());
        r.put("idempotency.kafka.bootstrap-servers", "localhost");
        assertThatThrownBy(() -> ApplicationContext.run(r).close())
            .hasStackTraceContaining("'localhost' is not host:port");
    }
}
