package dev.idempotency.kafka;

import dev.idempotency.testsupport.TestKafka;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AdminClientConfig;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.consumer.OffsetAndMetadata;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.header.Header;
import org.apache.kafka.common.serialization.ByteArrayDeserializer;
import org.apache.kafka.common.serialization.ByteArraySerializer;

import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import java.util.concurrent.TimeUnit;

/** A test's own topics on a real cluster: produce raw records, read a topic back, read a group's offsets. */
final class Topics implements AutoCloseable {

    final String bootstrap;
    private final KafkaProducer<byte[], byte[]> producer;

    Topics(String bootstrap) {
        this.bootstrap = bootstrap;
        this.producer = new KafkaProducer<>(Map.of(ProducerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap,
            ProducerConfig.KEY_SERIALIZER_CLASS_CONFIG, ByteArraySerializer.class,
            ProducerConfig.VALUE_SERIALIZER_CLASS_CONFIG, ByteArraySerializer.class,
            ProducerConfig.ACKS_CONFIG, "all", ProducerConfig.LINGER_MS_CONFIG, 1));
    }

    static String unique(String prefix) {
        return prefix + "-" + UUID.randomUUID();
    }

    void create(int partitions, String... topics) {
        TestKafka.createTopics(bootstrap, partitions, topics);
    }

    /** Sends a record with {@code id} as its message id (or none when null), and waits for the acknowledgement. */
    void send(String topic, String key, String id, String body) {
        ProducerRecord<byte[], byte[]> r = new ProducerRecord<>(topic, key == null ? null : key.getBytes(StandardCharsets.UTF_8),
            body == null ? null : body.getBytes(StandardCharsets.UTF_8));
        if (id != null) {
            r.headers().add(KafkaHeaders.MESSAGE_ID, id.getBytes(StandardCharsets.UTF_8));
        }
        try {
            producer.send(r).get(30, TimeUnit.SECONDS);
        } catch (Exception e) {
            throw new IllegalStateException("could not produce to " + topic, e);
        }
    }

    /** @return every record of {@code topic} from the start, waiting until {@code expected} arrived or 30 s */
    List<ConsumerRecord<byte[], byte[]>> read(String topic, int expected) {
        return read(topic, expected, Duration.ofSeconds(30));
    }

    /** @return every record of {@code topic} from the start, waiting until {@code expected} arrived or {@code within} */
    List<ConsumerRecord<byte[], byte[]>> read(String topic, int expected, Duration within) {
        try (KafkaConsumer<byte[], byte[]> c = reader(Map.of(ConsumerConfig.GROUP_ID_CONFIG, unique("reader"),
            ConsumerConfig.AUTO_OFFSET_RESET_CONFIG, "earliest"))) {
            c.subscribe(List.of(topic));
            List<ConsumerRecord<byte[], byte[]>> got = new ArrayList<>();
            long deadline = System.nanoTime() + within.toNanos();
            while (got.size() < expected && System.nanoTime() < deadline) {
                c.poll(Duration.ofMillis(200)).forEach(got::add);
            }
            return got;
        }
    }

    /**
     * @return every record on {@code topic} now: each partition read from its start up to the end
     *     offset it had when the read began, in offset order per partition; fails after {@code within}
     */
    List<ConsumerRecord<byte[], byte[]>> readToEnd(String topic, Duration within) {
        try (KafkaConsumer<byte[], byte[]> c = reader(Map.of())) {
            List<TopicPartition> partitions = c.partitionsFor(topic).stream()
                .map(p -> new TopicPartition(topic, p.partition())).toList();
            c.assign(partitions); // no group: nothing is committed
            c.seekToBeginning(partitions);
            Map<TopicPartition, Long> ends = c.endOffsets(partitions);
            List<ConsumerRecord<byte[], byte[]>> got = new ArrayList<>();
            long deadline = System.nanoTime() + within.toNanos();
            while (partitions.stream().anyMatch(tp -> c.position(tp) < ends.get(tp))) {
                if (System.nanoTime() > deadline) {
                    throw new AssertionError(topic + " not read to its end " + ends + " within " + within + ": "
                        + got.size() + " records");
                }
                c.poll(Duration.ofMillis(200)).forEach(got::add);
            }
            return got;
        }
    }

    /** A consumer of byte arrays on this broker, with {@code settings} besides. */
    private KafkaConsumer<byte[], byte[]> reader(Map<String, Object> settings) {
        Map<String, Object> all = new HashMap<>(settings);
        all.put(ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
        all.put(ConsumerConfig.KEY_DESERIALIZER_CLASS_CONFIG, ByteArrayDeserializer.class);
        all.put(ConsumerConfig.VALUE_DESERIALIZER_CLASS_CONFIG, ByteArrayDeserializer.class);
        return new KafkaConsumer<>(all);
    }

    /** @return the committed offsets of {@code group}, summed over its partitions */
    long committed(String group) {
        try (Admin admin = Admin.create(Map.of(AdminClientConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap))) {
            Map<TopicPartition, OffsetAndMetadata> offsets = admin.listConsumerGroupOffsets(group)
                .partitionsToOffsetAndMetadata().get(10, TimeUnit.SECONDS);
            return offsets.values().stream().filter(java.util.Objects::nonNull).mapToLong(OffsetAndMetadata::offset).sum();
        } catch (Exception e) {
            throw new IllegalStateException(e);
        }
    }

    static String header(ConsumerRecord<byte[], byte[]> r, String name) {
        Header h = r.headers().lastHeader(name);
        return h == null ? null : new String(h.value(), StandardCharsets.UTF_8);
    }

    static String text(byte[] b) {
        return b == null ? null : new String(b, StandardCharsets.UTF_8);
    }

    @Override
    public void close() {
        producer.close(Duration.ofSeconds(2));
    }
}
