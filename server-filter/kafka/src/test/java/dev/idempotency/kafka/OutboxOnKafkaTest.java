package dev.idempotency.kafka;

import dev.idempotency.messaging.InMemoryOutboxStore;
import dev.idempotency.messaging.Outbox;
import dev.idempotency.messaging.OutboxRelay;
import dev.idempotency.messaging.OutboxStore;
import dev.idempotency.messaging.OutgoingMessage;
import dev.idempotency.testsupport.Await;
import dev.idempotency.testsupport.EmbeddedKafkaBroker;
import dev.idempotency.testsupport.Stores;
import io.micronaut.context.ApplicationContext;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.DisplayName;
import org.junit.jupiter.api.Test;

import java.util.ArrayList;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * The outbox relay on Kafka (CONTRACT M3, M8), against a broker of this test's own so its network
 * path can be cut: the ordering key is the record key and a key's messages keep their order, the
 * message id travels in a header, a topic that does not exist parks its message without holding
 * back the others, and a broker that is away delays messages without failing their publish or
 * losing one.
 */
class OutboxOnKafkaTest {

    private static EmbeddedKafkaBroker broker;
    private static Topics topics;
    private final String topic = Topics.unique("payments");
    private final List<ApplicationContext> contexts = new ArrayList<>();

    @BeforeAll
    static void startBroker() {
        broker = EmbeddedKafkaBroker.start();
        topics = new Topics(broker.bootstrapServers());
    }

    @AfterAll
    static void stopBroker() {
        topics.close();
        broker.close();
    }

    @AfterEach
    void cleanUp() {
        contexts.forEach(ApplicationContext::close);
        Stores.removeCreated();
    }

    private ApplicationContext publisher() {
        Map<String, Object> p = new HashMap<>(Stores.MEMORY.properties());
        p.put("idempotency.kafka.bootstrap-servers", broker.bootstrapServers());
        p.put("idempotency.kafka.request-timeout", "1s");
        p.put("idempotency.kafka.delivery-timeout", "2s");
        p.put("idempotency.outbox.poll-interval", "50ms");
        p.put("idempotency.outbox.retry-backoff", "50ms");
        p.put("idempotency.outbox.retry-backoff-max", "200ms");
        p.put("idempotency.outbox.send-timeout", "5s");
        p.put("idempotency.outbox.max-attempts", "2");
        ApplicationContext ctx = ApplicationContext.run(p);
        contexts.add(ctx);
        return ctx;
    }

    @Test
    @DisplayName("M8: the ordering key is the record key, a key keeps its order, the message id is in a header")
    void keysOrderAndHeaders() {
        topics.create(4, topic);
        Outbox outbox = publisher().getBean(Outbox.class);
        for (int i = 0; i < 60; i++) {
            outbox.publish("m-" + i, "key-" + i, OutgoingMessage.json(topic, "captured", "{\"n\":" + i + "}")
                .orderedBy("payment-" + (i % 3)).withHeader("tenant", "acme"));
        }
        List<ConsumerRecord<byte[], byte[]>> got = topics.read(topic, 60);
        assertThat(got).hasSize(60);
        Map<String, List<Integer>> perKey = new LinkedHashMap<>();
        Map<String, Integer> partitionOfKey = new HashMap<>();
        for (ConsumerRecord<byte[], byte[]> r : got) {
            String key = Topics.text(r.key());
            String id = Topics.header(r, KafkaHeaders.MESSAGE_ID);
            int n = Integer.parseInt(id.substring(2));
            assertThat(key).isEqualTo("payment-" + (n % 3));
            assertThat(Topics.text(r.value())).isEqualTo("{\"n\":" + n + "}");
            assertThat(Topics.header(r, Outbox.KEY_HEADER)).isEqualTo("key-" + n);
            assertThat(Topics.header(r, KafkaHeaders.CONTENT_TYPE)).isEqualTo("application/json");
            assertThat(Topics.header(r, KafkaHeaders.ROUTING_KEY)).isEqualTo("captured");
            assertThat(Topics.header(r, "tenant")).isEqualTo("acme");
            perKey.computeIfAbsent(key, k -> new ArrayList<>()).add(n);
            assertThat(partitionOfKey.computeIfAbsent(key, k -> r.partition())).isEqualTo(r.partition());
        }
        perKey.values().forEach(ns -> assertThat(ns).isSorted());
    }

    @Test
    @DisplayName("M8: a message for a topic that does not exist is parked with the reason; the others are sent")
    void missingTopicIsParked() throws Exception {
        topics.create(1, topic);
        ApplicationContext ctx = publisher();
        Outbox outbox = ctx.getBean(Outbox.class);
        outbox.publish("lost-1", null, OutgoingMessage.json("no-such-topic-" + topic, "", "{}"));
        outbox.publish("fine-1", null, OutgoingMessage.json(topic, "", "{}"));
        assertThat(topics.read(topic, 1)).hasSize(1);
        InMemoryOutboxStore store = (InMemoryOutboxStore) ctx.getBean(OutboxStore.class);
        Await.until("the message for the missing topic is parked", () -> store.parked().size() == 1);
        assertThat(store.parked().get(0).reason()).contains("the topic 'no-such-topic-" + topic + "' does not exist",
            "create it");
        assertThat(store.depth()).isZero();
    }

    @Test
    @DisplayName("M8: while the broker is away, publishing works and nothing is lost; back, every message is sent once")
    void brokerAway() throws Exception {
        topics.create(2, topic);
        ApplicationContext ctx = publisher();
        Outbox outbox = ctx.getBean(Outbox.class);
        OutboxStore store = ctx.getBean(OutboxStore.class);
        outbox.publish("before", null, OutgoingMessage.json(topic, "", "{}"));
        assertThat(topics.read(topic, 1)).hasSize(1);
        broker.cut();
        try {
            for (int i = 0; i < 30; i++) {
                outbox.publish("away-" + i, null, OutgoingMessage.json(topic, "", "{}").orderedBy("k" + (i % 5)));
            }
            Thread.sleep(3000); // the relay tries, and fails, meanwhile: more than one delivery timeout
            assertThat(store.depth()).isEqualTo(30);
            assertThat(((InMemoryOutboxStore) store).parked()).isEmpty(); // an absent broker counts against no message
        } finally {
            broker.restore();
        }
        ctx.getBean(OutboxRelay.class).relay();
        Await.until("the outbox is empty", () -> store.depth() == 0);
        List<ConsumerRecord<byte[], byte[]>> got = topics.read(topic, 31);
        assertThat(got.stream().map(r -> Topics.header(r, KafkaHeaders.MESSAGE_ID)).distinct().count()).isEqualTo(31);
    }
}
