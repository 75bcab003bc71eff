package dev.idempotency.kafka;

import dev.idempotency.messaging.MessageSender;
import dev.idempotency.messaging.Outbox;
import dev.idempotency.messaging.OutboxRelay;
import dev.idempotency.messaging.OutboxStore;
import dev.idempotency.messaging.OutgoingMessage;
import dev.idempotency.testsupport.Await;
import dev.idempotency.testsupport.ChildJvm;
import dev.idempotency.testsupport.EmbeddedKafkaBroker;
import dev.idempotency.testsupport.Stores;
import io.micronaut.context.ApplicationContext;
import io.micronaut.context.annotation.Requires;
import io.micronaut.context.annotation.Value;
import io.micronaut.context.event.BeanCreatedEvent;
import io.micronaut.context.event.BeanCreatedEventListener;
import jakarta.inject.Singleton;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.DisplayName;
import org.junit.jupiter.api.Test;

import java.net.ServerSocket;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/**
 * The relay that scales out (CONTRACT M9) and its wake-ups (M10), on one PostgreSQL outbox shared
 * by several instances, relaying to a real Kafka: partitions shared out and following instances
 * that join, leave and crash; every message sent, in order per key; a relay killed mid-batch
 * sends at most its unconfirmed batch twice, and one whose broker confirms late sends nothing
 * twice; a partition count the running instances do not share fails the startup; a publish on
 * one instance wakes the relay of another.
 */
class ScalableRelayTest {

    private static final int PARTITIONS = 16;
    private static EmbeddedKafkaBroker broker;
    private static Topics topics;
    private final String topic = Topics.unique("relay");
    private final List<ApplicationContext> contexts = new ArrayList<>();
    private Map<String, Object> store;

    @BeforeAll
    static void startBroker() {
        // every batch's acknowledgement comes 20 ms late: batches are in flight long enough to be killed mid-way
        broker = EmbeddedKafkaBroker.withDelay(Duration.ofMillis(20));
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

    private Map<String, Object> settings(Map<String, Object> extra) {
        if (store == null) {
            store = Stores.POSTGRES.properties(); // one outbox, shared by every instance of the test
        }
        Map<String, Object> p = new HashMap<>(store);
        p.put("idempotency.kafka.bootstrap-servers", broker.bootstrapServers());
        p.put("idempotency.outbox.poll-interval", "100ms");
        p.put("idempotency.outbox.relay-lease", "2s");
        p.put("idempotency.outbox.partitions", String.valueOf(PARTITIONS));
        p.put("idempotency.outbox.batch-size", "50");
        p.putAll(extra);
        return p;
    }

    private ApplicationContext instance(Map<String, Object> extra) {
        ApplicationContext ctx = ApplicationContext.run(settings(extra));
        contexts.add(ctx);
        return ctx;
    }

    private static Set<Integer> held(ApplicationContext ctx) {
        return ctx.getBean(OutboxRelay.class).partitions();
    }

    private static boolean sharedOut(List<ApplicationContext> instances) {
        Set<Integer> union = new HashSet<>();
        int total = 0;
        int share = (PARTITIONS + instances.size() - 1) / instances.size();
        for (ApplicationContext ctx : instances) {
            Set<Integer> h = held(ctx);
            if (h.size() < PARTITIONS / instances.size() || h.size() > share) {
                return false;
            }
            union.addAll(h);
            total += h.size();
        }
        return union.size() == PARTITIONS && total == PARTITIONS;
    }

    @Test
    @DisplayName("M9: partitions are shared out among the instances and follow the ones that join and leave")
    void partitionsFollowInstances() throws Exception {
        topics.create(4, topic);
        ApplicationContext a = instance(Map.of());
        Await.until("one instance relays every partition", () -> held(a).size() == PARTITIONS);
        ApplicationContext b = instance(Map.of());
        ApplicationContext c = instance(Map.of());
        Await.until("three instances share the partitions", () -> sharedOut(List.of(a, b, c)));
        c.close();
        contexts.remove(c);
        Await.until("the two left share them", () -> sharedOut(List.of(a, b)));
    }

    @Test
    @DisplayName("M9: three instances publishing and relaying send every message once, each key in order")
    void everyMessageOnceInOrder() throws Exception {
        topics.create(4, topic);
        List<ApplicationContext> instances = List.of(instance(Map.of()), instance(Map.of()), instance(Map.of()));
        Await.until("three instances share the partitions", () -> sharedOut(instances));
        int keys = 30;
        int perKey = 40;
        ExecutorService pool = Executors.newFixedThreadPool(3);
        try {
            List<Future<?>> done = new ArrayList<>();
            for (int t = 0; t < 3; t++) {
                Outbox outbox = instances.get(t).getBean(Outbox.class);
                int thread = t;
                done.add(pool.submit(() -> {
                    for (int n = 0; n < perKey; n++) {
                        for (int k = thread; k < keys; k += 3) {
                            outbox.publish("k" + k + "-" + n, null,
                                OutgoingMessage.json(topic, "", "{}").orderedBy("k" + k));
                        }
                    }
                    return null;
                }));
            }
            for (Future<?> f : done) {
                f.get();
            }
        } finally {
            pool.shutdown();
        }
        List<ConsumerRecord<byte[], byte[]>> got = topics.read(topic, keys * perKey);
        assertThat(got).hasSize(keys * perKey);
        assertThat(got.stream().map(r -> Topics.header(r, KafkaHeaders.MESSAGE_ID)).distinct().count())
            .isEqualTo(keys * perKey);
        assertInOrderPerKey(got);
        assertThat(instances.get(0).getBean(OutboxStore.class).depth()).isZero();
    }

    @Test
    @DisplayName("M9: a relay killed mid-batch (confirmed by the broker, not marked sent): its partitions move within"
        + " a lease, nothing is lost, order is kept, and exactly that batch is sent twice")
    void relayKilledMidBatch() throws Exception {
        topics.create(4, topic);
        ApplicationContext survivor = instance(Map.of());
        int port;
        try (ServerSocket s = new ServerSocket(0)) {
            port = s.getLocalPort();
        }
        Path marker = Path.of("target", "relay-child-" + topic + ".held").toAbsolutePath();
        Map<String, String> childProps = new LinkedHashMap<>();
        settings(Map.of()).forEach((k, v) -> childProps.put(k, String.valueOf(v)));
        childProps.put("micronaut.server.port", String.valueOf(port));
        childProps.put("relay-child.hold-batch", "3");
        childProps.put("relay-child.marker", marker.toString());
        Set<String> held;
        long killedAt;
        int keys = 40;
        int perKey = 50;
        try (ChildJvm child = ChildJvm.of(RelayChild.class.getName(), List.of(), childProps, port,
            Path.of("target", "relay-child.log")).start()) {
            Await.until("the two instances share the partitions", () -> held(survivor).size() == PARTITIONS / 2);
            Outbox outbox = survivor.getBean(Outbox.class);
            for (int n = 0; n < perKey; n++) {
                for (int k = 0; k < keys; k++) {
                    outbox.publish("k" + k + "-" + n, null, OutgoingMessage.json(topic, "", "{}").orderedBy("k" + k));
                }
            }
            Await.until("the child holds its third batch, confirmed by the broker", Duration.ofSeconds(30),
                () -> Files.exists(marker));
            child.kill();
            killedAt = System.nanoTime();
            held = new HashSet<>(Files.readAllLines(marker));
        }
        assertThat(held).as("the batch in flight at the kill").isNotEmpty();
        Await.until("the survivor holds every partition", () -> held(survivor).size() == PARTITIONS);
        Duration takeover = Duration.ofNanos(System.nanoTime() - killedAt);
        System.out.printf("[relay killed mid-batch] %d messages confirmed and unmarked at the kill; the survivor held"
            + " every partition %d ms after it%n", held.size(), takeover.toMillis());
        assertThat(takeover).as("within a lease and a pass").isLessThan(Duration.ofSeconds(2 + 2));
        Await.until("the outbox is empty", () -> survivor.getBean(OutboxStore.class).depth() == 0);
        // everything is on the topic now, copies included: read all there is
        List<ConsumerRecord<byte[], byte[]>> got = topics.readToEnd(topic, Duration.ofSeconds(20));
        Map<String, Integer> copies = copiesById(got);
        assertThat(copies).as("every message sent").hasSize(keys * perKey);
        Set<String> twice = new HashSet<>();
        copies.forEach((id, n) -> {
            assertThat(n).as("copies of %s", id).isLessThanOrEqualTo(2);
            if (n == 2) {
                twice.add(id);
            }
        });
        assertThat(twice).as("sent twice: exactly the batch the kill left unmarked").isEqualTo(held);
        assertInOrderPerKey(got);
    }

    @Test
    @DisplayName("M9: a broker slow to confirm a batch, for longer than the lease: its instance keeps the partitions,"
        + " and nothing is sent twice")
    void slowConfirmationKeepsThePartitions() throws Exception {
        topics.create(4, topic);
        ApplicationContext slow = instance(Map.of(SlowFirstBatch.DELAY, "6s")); // three leases
        Await.until("it relays every partition", () -> held(slow).size() == PARTITIONS);
        ApplicationContext other = instance(Map.of());
        Await.until("the two instances share the partitions", () -> sharedOut(List.of(slow, other)));
        Set<Integer> others = held(other);
        int keys = 16;
        int perKey = 10;
        Outbox outbox = other.getBean(Outbox.class);
        for (int n = 0; n < perKey; n++) {
            for (int k = 0; k < keys; k++) {
                outbox.publish("k" + k + "-" + n, null, OutgoingMessage.json(topic, "", "{}").orderedBy("k" + k));
            }
        }
        SlowFirstBatch delayed = slow.getBean(SlowFirstBatch.class);
        Await.until("the broker confirmed the slow instance's first batch", delayed::confirmed);
        Set<Integer> seen = new HashSet<>(others);
        while (!delayed.answered()) { // the lease runs out twice over meanwhile, unless it is renewed
            seen.addAll(held(other));
            Thread.sleep(50);
        }
        assertThat(seen).as("the other instance's partitions while the confirmation was late").isEqualTo(others);
        Await.until("the outbox is empty", () -> other.getBean(OutboxStore.class).depth() == 0);
        List<ConsumerRecord<byte[], byte[]>> got = topics.readToEnd(topic, Duration.ofSeconds(20));
        Map<String, Integer> copies = copiesById(got);
        assertThat(copies).as("every message sent").hasSize(keys * perKey);
        assertThat(copies.values()).as("sent once each").containsOnly(1);
        assertInOrderPerKey(got);
    }

    /** With {@value #DELAY} set: the broker's outcomes of the instance's first batch come that much late. */
    @Singleton
    @Requires(property = SlowFirstBatch.DELAY)
    static final class SlowFirstBatch implements BeanCreatedEventListener<MessageSender> {
        static final String DELAY = "scalable-relay-test.first-batch-delay";
        private final Duration delay;
        private final AtomicBoolean first = new AtomicBoolean(true);
        private volatile boolean confirmed;
        private volatile boolean answered;

        SlowFirstBatch(@Value("${" + DELAY + "}") Duration delay) {
            this.delay = delay;
        }

        boolean confirmed() {
            return confirmed;
        }

        boolean answered() {
            return answered;
        }

        @Override
        public MessageSender onCreated(BeanCreatedEvent<MessageSender> event) {
            MessageSender real = event.getBean();
            return messages -> {
                CompletionStage<List<String>> outcomes = real.send(messages);
                if (!first.compareAndSet(true, false)) {
                    return outcomes;
                }
                return outcomes.thenCompose(o -> {
                    confirmed = true;
                    return CompletableFuture.supplyAsync(() -> {
                        answered = true;
                        return o;
                    }, CompletableFuture.delayedExecutor(delay.toMillis(), TimeUnit.MILLISECONDS));
                });
            };
        }
    }

    @Test
    @DisplayName("M9: an instance whose partition count differs from the running instances' fails its startup")
    void partitionCountMismatch() throws Exception {
        topics.create(1, topic);
        ApplicationContext a = instance(Map.of());
        Await.until("it relays", () -> held(a).size() == PARTITIONS);
        assertThatThrownBy(() -> instance(Map.of("idempotency.outbox.partitions", "8")))
            .hasStackTraceContaining("idempotency.outbox.partitions is 8 on this instance, but 16 on the instances"
                + " relaying")
            .hasStackTraceContaining("stop them all, then start them with the new value");
        a.close();
        contexts.remove(a);
        ApplicationContext b = instance(Map.of("idempotency.outbox.partitions", "8"));
        Await.until("alone, it takes the new count", () -> held(b).size() == 8);
    }

    @Test
    @DisplayName("M10: a publish on one instance wakes the relay of another at once, not at its next poll")
    void notifyWakesAnotherInstance() throws Exception {
        topics.create(1, topic);
        ApplicationContext relay = instance(Map.of("idempotency.outbox.poll-interval", "60s"));
        ApplicationContext api = instance(Map.of("idempotency.outbox.poll-interval", "60s",
            "idempotency.outbox.relay-enabled", "false"));
        Await.until("the relay holds every partition", () -> held(relay).size() == PARTITIONS);
        Thread.sleep(500); // its LISTEN is in place (it starts with the relay)
        long start = System.nanoTime();
        api.getBean(Outbox.class).publish("woken", null, OutgoingMessage.json(topic, "", "{}"));
        assertThat(topics.read(topic, 1)).hasSize(1);
        // well inside the poll interval: only the notification can have woken it
        assertThat(Duration.ofNanos(System.nanoTime() - start)).isLessThan(Duration.ofSeconds(30));
    }

    /** @return how many times each message id is on the topic */
    private static Map<String, Integer> copiesById(List<ConsumerRecord<byte[], byte[]>> records) {
        Map<String, Integer> copies = new HashMap<>();
        records.forEach(r -> copies.merge(Topics.header(r, KafkaHeaders.MESSAGE_ID), 1, Integer::sum));
        return copies;
    }

    /** Per key, the first arrival of each message follows the publish order (k<key>-<n>, n rising). */
    private static void assertInOrderPerKey(List<ConsumerRecord<byte[], byte[]>> records) {
        Map<String, Integer> last = new HashMap<>();
        Set<String> seen = new HashSet<>();
        for (ConsumerRecord<byte[], byte[]> r : records) {
            String id = Topics.header(r, KafkaHeaders.MESSAGE_ID);
            if (!seen.add(id)) {
                continue; // a duplicate of one seen before: consumers drop it
            }
            String key = id.substring(0, id.indexOf('-'));
            int n = Integer.parseInt(id.substring(id.indexOf('-') + 1));
            Integer before = last.put(key, n);
            assertThat(n).as("message %s after %s-%s", id, key, before).isEqualTo(before == null ? 0 : before + 1);
        }
    }
}
