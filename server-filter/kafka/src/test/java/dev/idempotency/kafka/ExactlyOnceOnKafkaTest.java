package dev.idempotency.kafka;

import dev.idempotency.testsupport.Await;
import dev.idempotency.testsupport.ChildJvm;
import dev.idempotency.testsupport.EmbeddedKafkaBroker;
import dev.idempotency.testsupport.Stores;
import dev.idempotency.testsupport.TestPostgres;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.serialization.ByteArraySerializer;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;

import java.net.ServerSocket;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.sql.Connection;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.Set;
import java.util.concurrent.atomic.AtomicBoolean;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * Exactly once end to end on Kafka (CONTRACT M4, M5, M8), with the Redis and the PostgreSQL
 * stores: 10,000 deliveries of which 20 % are duplicates, to consumers in JVMs of their own that
 * are killed ({@code kill -9}) and started again three times, joined by a second consumer that
 * then leaves (two rebalances), while the broker's network path is cut for a while. Every distinct
 * message is booked; the transactional consumer (the inbox, PostgreSQL) books none twice; the plain
 * one (Redis) may book twice only what a kill interrupted between its write and its stored
 * outcome; each key's messages are booked in order.
 */
class ExactlyOnceOnKafkaTest {

    private static final int DELIVERIES = 10_000;
    private static final int DISTINCT = 8_334; // the rest, 1,666, are duplicates of earlier ones: 20 % of deliveries
    private static final int KEYS = 40;
    private static final int PARTITIONS = 4;
    private static EmbeddedKafkaBroker broker;

    @BeforeAll
    static void startBroker() {
        broker = EmbeddedKafkaBroker.start();
    }

    @AfterAll
    static void stopBroker() {
        broker.close();
        Stores.removeCreated();
    }

    @ParameterizedTest(name = "M8: {0}: 10,000 deliveries, 20 % duplicates, 3 kills, a rebalance, a cut: each once")
    @EnumSource(value = Stores.class, names = {"REDIS", "POSTGRES"})
    void exactlyOnce(Stores store) throws Exception {
        String topic = Topics.unique("exactly-once");
        String ledger = TestPostgres.newSchema();
        try (Topics topics = new Topics(broker.bootstrapServers());
             Connection db = TestPostgres.server().connect()) {
            topics.create(PARTITIONS, topic);
            try (Statement s = db.createStatement()) {
                s.execute("CREATE SCHEMA IF NOT EXISTS " + ledger);
                s.execute("CREATE TABLE " + ledger + ".ledger (n bigserial PRIMARY KEY, message_id text NOT NULL,"
                    + " ordering_key text NOT NULL, seq int NOT NULL)");
            }
            boolean transactional = store == Stores.POSTGRES;
            Map<String, String> props = new LinkedHashMap<>();
            store.properties().forEach((k, v) -> props.put(k, String.valueOf(v)));
            props.put("idempotency.outbox.enabled", "false");
            props.put("idempotency.kafka.bootstrap-servers", broker.bootstrapServers());
            props.put("idempotency.kafka.properties.session.timeout.ms", "6000");
            props.put("idempotency.kafka.properties.heartbeat.interval.ms", "1000");
            props.put("idempotency.kafka.consumers.ledger.topics", topic);
            props.put("idempotency.kafka.consumers.ledger.group-id", topic);
            props.put("idempotency.kafka.consumers.ledger.transactional", String.valueOf(transactional));
            props.put("idempotency.kafka.consumers.ledger.lease", "3s");
            props.put("idempotency.kafka.consumers.ledger.in-progress-delay", "500ms");
            props.put("idempotency.kafka.consumers.ledger.retry-delay", "200ms");
            props.put("idempotency.kafka.consumers.ledger.max-attempts", "1000"); // a cut must not dead-letter
            props.put("ledger.mode", transactional ? "transactional" : "plain");
            props.put("ledger.schema", ledger);
            props.put("ledger.url", TestPostgres.server().url());
            props.put("ledger.user", TestPostgres.server().user());
            props.put("ledger.password", TestPostgres.server().password() == null ? "" : TestPostgres.server().password());

            AtomicBoolean producing = new AtomicBoolean(true);
            Thread producer = new Thread(() -> produce(topic, producing), "exactly-once-producer");
            List<ChildJvm> started = new ArrayList<>();
            ChildJvm a = consumer(props, "a", started);
            producer.start();
            int kills = 0;
            try {
                for (int at : new int[] {1000, 2500, 4000}) {
                    awaitBooked(db, ledger, at);
                    a.kill();
                    kills++;
                    a = consumer(props, "a" + kills, started);
                }
                awaitBooked(db, ledger, 5000);
                ChildJvm b = consumer(props, "b", started); // joins: a rebalance
                awaitBooked(db, ledger, 6500);
                b.stop(Duration.ofSeconds(30)); // leaves: another
                awaitBooked(db, ledger, 7000);
                broker.cut();
                Thread.sleep(3000);
                broker.restore();
                producer.join(120_000);
                Await.until("every distinct message is booked", Duration.ofMinutes(3),
                    () -> distinct(db, ledger) >= DISTINCT);
                Thread.sleep(2000); // anything still to come twice would come now
            } finally {
                producing.set(false);
                started.forEach(ChildJvm::close);
            }
            long distinct = distinct(db, ledger);
            long rows = count(db, "SELECT count(*) FROM " + ledger + ".ledger");
            System.out.printf("[exactly-once on Kafka] %s store, %s consumer: %,d deliveries, %,d distinct booked,"
                + " %,d bookings, %d kills%n", store, transactional ? "transactional" : "plain", DELIVERIES, distinct,
                rows, kills);
            assertThat(distinct).isEqualTo(DISTINCT);
            if (transactional) {
                assertThat(rows).as("a transactional consumer never books twice").isEqualTo(DISTINCT);
            } else {
                // a plain handler's write and its stored outcome are two steps: a kill between them runs it again
                assertThat(rows - distinct).as("booked twice").isLessThanOrEqualTo((long) kills * PARTITIONS);
            }
            assertInOrderPerKey(db, ledger);
        } finally {
            TestPostgres.dropSchema(ledger);
        }
    }

    private static ChildJvm consumer(Map<String, String> props, String name, List<ChildJvm> started) throws Exception {
        int port;
        try (ServerSocket s = new ServerSocket(0)) {
            port = s.getLocalPort();
        }
        Map<String, String> p = new HashMap<>(props);
        p.put("micronaut.server.port", String.valueOf(port));
        ChildJvm child = ChildJvm.of(LedgerChild.class.getName(), List.of(), p, port,
            Path.of("target", "exactly-once", name + ".log"));
        started.add(child);
        return child.start();
    }

    /** 10,000 records over 40 keys, each key's in sequence; every sixth a repeat of a record sent before. */
    private static void produce(String topic, AtomicBoolean producing) {
        Random random = new Random(42);
        int[] next = new int[KEYS];
        List<ProducerRecord<byte[], byte[]>> sent = new ArrayList<>();
        try (KafkaProducer<byte[], byte[]> p = new KafkaProducer<>(Map.of(ProducerConfig.BOOTSTRAP_SERVERS_CONFIG,
            broker.bootstrapServers(), ProducerConfig.KEY_SERIALIZER_CLASS_CONFIG, ByteArraySerializer.class,
            ProducerConfig.VALUE_SERIALIZER_CLASS_CONFIG, ByteArraySerializer.class, ProducerConfig.ACKS_CONFIG, "all",
            ProducerConfig.DELIVERY_TIMEOUT_MS_CONFIG, 120_000))) {
            int distinct = 0;
            for (int i = 0; i < DELIVERIES && producing.get(); i++) {
                ProducerRecord<byte[], byte[]> r;
                if (distinct < DISTINCT && (i % 6 != 5 || sent.isEmpty())) {
                    int key = random.nextInt(KEYS);
                    int seq = next[key]++;
                    r = new ProducerRecord<>(topic, ("k" + key).getBytes(StandardCharsets.UTF_8),
                        ("k" + key + ":" + seq).getBytes(StandardCharsets.UTF_8));
                    r.headers().add(KafkaHeaders.MESSAGE_ID, ("id-k" + key + "-" + seq).getBytes(StandardCharsets.UTF_8));
                    sent.add(r);
                    distinct++;
                } else {
                    ProducerRecord<byte[], byte[]> earlier = sent.get(random.nextInt(sent.size()));
                    r = new ProducerRecord<>(topic, null, earlier.key(), earlier.value(), earlier.headers());
                }
                p.send(r);
                if (i % 200 == 199) {
                    p.flush();
                    Thread.sleep(20); // about 10,000 in 20 s or more: the faults fall inside the run
                }
            }
            p.flush();
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }

    private static void awaitBooked(Connection db, String ledger, long n) throws InterruptedException {
        Await.until(n + " messages booked", Duration.ofMinutes(2), () -> distinct(db, ledger) >= n);
    }

    private static long distinct(Connection db, String ledger) {
        return count(db, "SELECT count(DISTINCT message_id) FROM " + ledger + ".ledger");
    }

    private static long count(Connection db, String sql) {
        try (Statement s = db.createStatement(); ResultSet rs = s.executeQuery(sql)) {
            rs.next();
            return rs.getLong(1);
        } catch (SQLException e) {
            throw new IllegalStateException(e);
        }
    }

    /** Per key, the first booking of each message follows its sequence: 0, 1, 2, ... */
    private static void assertInOrderPerKey(Connection db, String ledger) throws SQLException {
        Map<String, Integer> last = new HashMap<>();
        Set<String> seen = new HashSet<>();
        try (Statement s = db.createStatement();
             ResultSet rs = s.executeQuery("SELECT message_id, ordering_key, seq FROM " + ledger + ".ledger ORDER BY n")) {
            while (rs.next()) {
                if (!seen.add(rs.getString(1))) {
                    continue;
                }
                Integer before = last.put(rs.getString(2), rs.getInt(3));
                assertThat(rs.getInt(3)).as("%s after %s", rs.getString(1), before)
                    .isEqualTo(before == null ? 0 : before + 1);
            }
        }
    }
}
