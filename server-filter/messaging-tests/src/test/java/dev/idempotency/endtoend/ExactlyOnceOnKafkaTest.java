package dev.idempotency.endtoend;

import dev.idempotency.kafka.KafkaHeaders;
import dev.idempotency.testsupport.EmbeddedKafkaBroker;
import dev.idempotency.testsupport.Stores;
import dev.idempotency.testsupport.TestKafka;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.serialization.ByteArraySerializer;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;

import java.nio.charset.StandardCharsets;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.UUID;

/**
 * {@link ExactlyOnceRun} on Kafka (CONTRACT M4, M5, M8), on an embedded KRaft broker behind a
 * proxy that the run cuts, with four partitions: a killed consumer has at most one record in
 * flight per partition, and per-key order holds (a key's records share a partition, and a
 * partition is consumed one record at a time, committed only past stored outcomes).
 */
class ExactlyOnceOnKafkaTest {

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
        ExactlyOnceRun.run(new Wire(), store, "exactly-once-" + UUID.randomUUID());
    }

    private static final class Wire implements ExactlyOnceRun.Wire {
        @Override
        public String name() {
            return "Kafka";
        }

        @Override
        public void create(String topic) {
            TestKafka.createTopics(broker.bootstrapServers(), PARTITIONS, topic);
        }

        @Override
        public Map<String, String> consumerProperties(String topic, boolean transactional) {
            Map<String, String> props = new LinkedHashMap<>();
            props.put("idempotency.rabbitmq.enabled", "false");
            props.put("idempotency.kafka.bootstrap-servers", broker.bootstrapServers());
            props.put("idempotency.kafka.properties.session.timeout.ms", "6000");
            props.put("idempotency.kafka.properties.heartbeat.interval.ms", "1000");
            props.put("idempotency.kafka.consumers.ledger.topics", topic);
            props.put("idempotency.kafka.consumers.ledger.group-id", topic);
            props.putAll(ExactlyOnceRun.consumerSettings("idempotency.kafka.consumers.ledger.", transactional));
            return props;
        }

        @Override
        public ExactlyOnceRun.Publisher publisher(String topic) {
            KafkaProducer<byte[], byte[]> p = new KafkaProducer<>(Map.of(ProducerConfig.BOOTSTRAP_SERVERS_CONFIG,
                broker.bootstrapServers(), ProducerConfig.KEY_SERIALIZER_CLASS_CONFIG, ByteArraySerializer.class,
                ProducerConfig.VALUE_SERIALIZER_CLASS_CONFIG, ByteArraySerializer.class, ProducerConfig.ACKS_CONFIG, "all",
                ProducerConfig.DELIVERY_TIMEOUT_MS_CONFIG, 120_000));
            return new ExactlyOnceRun.Publisher() {
                @Override
                public void send(String key, String messageId, String body) {
                    ProducerRecord<byte[], byte[]> r = new ProducerRecord<>(topic, key.getBytes(StandardCharsets.UTF_8),
                        body.getBytes(StandardCharsets.UTF_8));
                    r.headers().add(KafkaHeaders.MESSAGE_ID, messageId.getBytes(StandardCharsets.UTF_8));
                    p.send(r);
                }

                @Override
                public void flush() {
                    p.flush();
                }

                @Override
                public void close() {
                    p.close();
                }
            };
        }

        @Override
        public void cut() {
            broker.cut();
        }

        @Override
        public void restore() {
            broker.restore();
        }

        @Override
        public int inFlightPerConsumer() {
            return PARTITIONS;
        }

        @Override
        public boolean ordersPerKey() {
            return true;
        }
    }
}
