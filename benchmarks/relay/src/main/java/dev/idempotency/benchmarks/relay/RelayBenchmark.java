package dev.idempotency.benchmarks.relay;

import dev.idempotency.kafka.KafkaHeaders;
import dev.idempotency.messaging.Outbox;
import dev.idempotency.messaging.OutboxPartitions;
import dev.idempotency.messaging.OutboxRelay;
import dev.idempotency.messaging.OutboxStore;
import dev.idempotency.messaging.OutgoingMessage;
import dev.idempotency.testsupport.EmbeddedKafkaBroker;
import dev.idempotency.testsupport.TestKafka;
import dev.idempotency.testsupport.TestPostgres;
import io.micronaut.context.ApplicationContext;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.common.serialization.ByteArrayDeserializer;

import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.SQLException;
import java.time.Duration;
import java.time.Instant;
import java.time.OffsetDateTime;
import java.time.ZoneOffset;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.UUID;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicLong;

/**
 * The outbox relay benchmark (CONTRACT M9, M10): what 1, 2 and 3 relay instances sharing one
 * PostgreSQL outbox send per second to Kafka, against the real (embedded) broker and against one
 * whose every acknowledgement comes 5 ms late (so the figure shows the relays' parallelism, not this
 * machine's cores); then the publish-to-consume latency of a steady 1,000 messages/s, published on an
 * instance that does not relay, with NOTIFY and with the poll alone. Every instance is an
 * application context of its own, in this JVM. See {@code benchmarks/relay/run}.
 */
public final class RelayBenchmark {

    private static final int KEYS = 1_000;
    private static final int PARTITIONS = 64;
    /** Small enough that a batch's 5 ms wait weighs against its work on this machine's two cores. */
    private static final int BATCH = 20;
    private static final StringBuilder REPORT = new StringBuilder();

    private RelayBenchmark() {
    }

    public static void main(String[] args) throws Exception {
        int messages = args.length > 0 ? Integer.parseInt(args[0]) : 30_000;
        TestPostgres.Server pg = TestPostgres.server();
        line("# Relay benchmark, %s, %d cores, PostgreSQL at %s, batches of %d, %d partitions", Instant.now(),
            Runtime.getRuntime().availableProcessors(), pg.url(), BATCH, PARTITIONS);
        line("");
        line("| broker | instances | messages | seconds | messages/s | vs 1 |");
        line("|---|---:|---:|---:|---:|---:|");
        try (EmbeddedKafkaBroker direct = EmbeddedKafkaBroker.start();
             EmbeddedKafkaBroker delayed = EmbeddedKafkaBroker.withDelay(Duration.ofNanos(2_500_000))) {
            for (var broker : List.of(Map.entry("embedded", direct), Map.entry("acks 5 ms late", delayed))) {
                double one = 0;
                for (int instances = 1; instances <= 3; instances++) {
                    double rate = throughput(pg, broker.getValue(), instances, messages);
                    one = instances == 1 ? rate : one;
                    line("| %s | %d | %,d | %.1f | %,.0f | %.2fx |", broker.getKey(), instances, messages,
                        messages / rate, rate, rate / one);
                }
            }
            line("");
            line("| wake-ups | rate | messages | p50 ms | p99 ms | max ms |");
            line("|---|---:|---:|---:|---:|---:|");
            latency(pg, direct, true, 1_000, Duration.ofSeconds(15));
            latency(pg, direct, false, 1_000, Duration.ofSeconds(15));
        }
        Path out = Path.of("benchmarks", "relay", "target", "relay-benchmark.md");
        Files.createDirectories(out.getParent());
        Files.writeString(out, REPORT);
        System.out.println("-> " + out);
        System.exit(0);
    }

    private static void line(String format, Object... args) {
        String s = String.format(Locale.ROOT, format, args);
        System.out.println(s);
        REPORT.append(s).append('\n');
    }

    private static Map<String, Object> settings(TestPostgres.Server pg, String schema, EmbeddedKafkaBroker broker) {
        Map<String, Object> p = new HashMap<>(TestPostgres.properties(pg, schema));
        p.put("idempotency.store.redis.enabled", "false");
        p.put("idempotency.rabbitmq.enabled", "false");
        p.put("idempotency.kafka.bootstrap-servers", broker.bootstrapServers());
        p.put("idempotency.outbox.partitions", String.valueOf(PARTITIONS));
        p.put("idempotency.outbox.relay-lease", "5s");
        p.put("idempotency.outbox.poll-interval", "200ms");
        p.put("idempotency.outbox.batch-size", String.valueOf(BATCH));
        p.put("datasources.default.maximum-pool-size", "8");
        return p;
    }

    /** Fills the outbox, then starts {@code instances} relays and times them until the outbox is empty. */
    private static double throughput(TestPostgres.Server pg, EmbeddedKafkaBroker broker, int instances, int messages)
        throws Exception {
        String schema = TestPostgres.newSchema();
        String topic = "relay-bench-" + UUID.randomUUID();
        TestKafka.createTopics(broker.bootstrapServers(), 12, topic);
        List<ApplicationContext> relays = new ArrayList<>();
        try {
            for (int i = 0; i < instances; i++) {
                relays.add(ApplicationContext.run(settings(pg, schema, broker)));
            }
            // the relays first, until they share the partitions out; then every message in one commit
            long waitUntil = System.nanoTime() + Duration.ofSeconds(30).toNanos();
            while (relays.stream().mapToInt(r -> r.getBean(OutboxRelay.class).partitions().size()).sum() != PARTITIONS
                || relays.stream().anyMatch(r -> r.getBean(OutboxRelay.class).partitions().size() < PARTITIONS / instances)) {
                if (System.nanoTime() > waitUntil) {
                    throw new IllegalStateException("the relays did not share the partitions out in 30 s");
                }
                Thread.sleep(20);
            }
            OutboxStore store = relays.get(0).getBean(OutboxStore.class);
            fill(pg, schema + ".idempotency_records_outbox", topic, messages);
            long start = System.nanoTime();
            while (store.depth() > 0) {
                // the count is a scan of the outbox: looked at more often, it would take PostgreSQL's time from the relays
                Thread.sleep(100);
                if (System.nanoTime() - start > Duration.ofMinutes(5).toNanos()) {
                    throw new IllegalStateException("not drained in 5 minutes: " + store.depth() + " left");
                }
            }
            return messages / ((System.nanoTime() - start) / 1e9);
        } finally {
            relays.forEach(ApplicationContext::close);
            TestPostgres.dropSchema(schema);
        }
    }

    /** {@code messages} rows straight into the outbox table, over {@value #KEYS} keys, as the outbox writes them. */
    private static void fill(TestPostgres.Server pg, String table, String topic, int messages) throws SQLException {
        OffsetDateTime now = OffsetDateTime.now(ZoneOffset.UTC);
        try (Connection c = pg.connect(); PreparedStatement ps = c.prepareStatement("INSERT INTO " + table
            + " (message_id, ordering_key, destination, routing_key, content_type, headers, body, created_at,"
            + " relay_partition) VALUES (?, ?, ?, '', 'application/json', '{}', ?, ?, ?)")) {
            c.setAutoCommit(false);
            byte[] body = new byte[200];
            Arrays.fill(body, (byte) 'x');
            for (int i = 0; i < messages; i++) {
                String key = "k" + (i % KEYS);
                ps.setString(1, "m-" + i);
                ps.setString(2, key);
                ps.setString(3, topic);
                ps.setBytes(4, body);
                ps.setObject(5, now);
                ps.setInt(6, OutboxPartitions.of(key, PARTITIONS));
                ps.addBatch();
                if (i % 1000 == 999) {
                    ps.executeBatch();
                }
            }
            ps.executeBatch();
            c.commit();
        }
    }

    /** A steady {@code rate} of publishes on an instance that does not relay; another relays; a consumer times them. */
    private static void latency(TestPostgres.Server pg, EmbeddedKafkaBroker broker, boolean notify, int rate,
                                Duration run) throws Exception {
        String schema = TestPostgres.newSchema();
        String topic = "relay-latency-" + UUID.randomUUID();
        TestKafka.createTopics(broker.bootstrapServers(), 12, topic);
        Map<String, Object> common = new HashMap<>(settings(pg, schema, broker));
        common.put("idempotency.outbox.notify", String.valueOf(notify));
        Map<String, Object> api = new HashMap<>(common);
        api.put("idempotency.outbox.relay-enabled", "false");
        List<Long> latencies = new ArrayList<>();
        AtomicBoolean consuming = new AtomicBoolean(true);
        AtomicLong warmupEnds = new AtomicLong();
        try (ApplicationContext relay = ApplicationContext.run(common); ApplicationContext publisher = ApplicationContext.run(api)) {
            Thread consumer = new Thread(() -> consume(broker, topic, consuming, warmupEnds, latencies), "bench-consumer");
            consumer.start();
            Outbox outbox = publisher.getBean(Outbox.class);
            int threads = 4;
            long perThreadNanos = 1_000_000_000L * threads / rate;
            long start = System.nanoTime();
            warmupEnds.set(start + Duration.ofSeconds(3).toNanos());
            long end = start + run.toNanos();
            List<Thread> senders = new ArrayList<>();
            for (int t = 0; t < threads; t++) {
                int thread = t;
                Thread s = new Thread(() -> {
                    long next = start + thread * (perThreadNanos / threads);
                    for (int n = 0; next < end; n++) {
                        long wait = next - System.nanoTime();
                        if (wait > 0) {
                            java.util.concurrent.locks.LockSupport.parkNanos(wait);
                        }
                        String body = Long.toString(System.nanoTime());
                        outbox.publish("t" + thread + "-" + n, null, new OutgoingMessage(topic, "",
                            body.getBytes(StandardCharsets.UTF_8), "text/plain", Map.of(), "k" + (n % KEYS)));
                        next += perThreadNanos;
                    }
                }, "bench-publisher-" + t);
                s.start();
                senders.add(s);
            }
            for (Thread s : senders) {
                s.join();
            }
            Thread.sleep(2000);
            consuming.set(false);
            consumer.join();
        } finally {
            TestPostgres.dropSchema(schema);
        }
        long[] sorted;
        synchronized (latencies) {
            sorted = latencies.stream().mapToLong(Long::longValue).sorted().toArray();
        }
        if (sorted.length == 0) {
            line("| %s | %,d/s | 0 | - | - | - |", notify ? "NOTIFY" : "poll (200 ms)", rate);
            return;
        }
        line("| %s | %,d/s | %,d | %.1f | %.1f | %.1f |", notify ? "NOTIFY" : "poll (200 ms)", rate, sorted.length,
            sorted[sorted.length / 2] / 1e6, sorted[(int) (sorted.length * 0.99)] / 1e6, sorted[sorted.length - 1] / 1e6);
    }

    private static void consume(EmbeddedKafkaBroker broker, String topic, AtomicBoolean consuming, AtomicLong warmupEnds,
                                List<Long> latencies) {
        try (KafkaConsumer<byte[], byte[]> c = new KafkaConsumer<>(Map.of(ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG,
            broker.bootstrapServers(), ConsumerConfig.GROUP_ID_CONFIG, "bench-" + topic,
            ConsumerConfig.AUTO_OFFSET_RESET_CONFIG, "earliest", ConsumerConfig.FETCH_MAX_WAIT_MS_CONFIG, 5,
            ConsumerConfig.KEY_DESERIALIZER_CLASS_CONFIG, ByteArrayDeserializer.class,
            ConsumerConfig.VALUE_DESERIALIZER_CLASS_CONFIG, ByteArrayDeserializer.class))) {
            c.subscribe(List.of(topic));
            while (consuming.get()) {
                for (ConsumerRecord<byte[], byte[]> r : c.poll(Duration.ofMillis(50))) {
                    long now = System.nanoTime();
                    long sent = Long.parseLong(new String(r.value(), StandardCharsets.UTF_8));
                    if (sent > warmupEnds.get() && r.headers().lastHeader(KafkaHeaders.MESSAGE_ID) != null) {
                        synchronized (latencies) {
                            latencies.add(now - sent);
                        }
                    }
                }
            }
        }
    }

}
