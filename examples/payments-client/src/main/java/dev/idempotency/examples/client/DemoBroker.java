package dev.idempotency.examples.client;

import com.rabbitmq.client.AMQP;
import com.rabbitmq.client.Channel;
import com.rabbitmq.client.Connection;
import com.rabbitmq.client.ConnectionFactory;
import dev.idempotency.examples.ledger.Ledger;
import dev.idempotency.kafka.KafkaHeaders;
import dev.idempotency.testsupport.EmbeddedKafkaBroker;
import dev.idempotency.testsupport.TestKafka;
import dev.idempotency.testsupport.TestRabbit;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AdminClientConfig;
import org.apache.kafka.clients.admin.OffsetSpec;
import org.apache.kafka.clients.consumer.OffsetAndMetadata;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.serialization.ByteArraySerializer;

import java.nio.charset.StandardCharsets;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;

/**
 * The broker of the demo's asynchronous half, with a topology of the run's own (removed at
 * {@link #close()}): the local one when it answers, else an embedded one started for the run.
 */
interface DemoBroker extends AutoCloseable {

    /** @return the settings that point the payments service at it */
    Map<String, Object> properties();

    /** Delivers {@code entries}' messages to the ledger once more, as a broker does after a consumer crash. */
    void deliverAgain(List<Ledger.Entry> entries) throws Exception;

    /** @return whether the ledger consumed everything delivered to it */
    boolean caughtUp();

    /** @return where the messages went, for the report */
    String describe();

    @Override
    void close();

    static DemoBroker start(String name, String run) {
        return name.equals("kafka") ? new Kafka(run) : new Rabbit(run);
    }

    static byte[] body(Ledger.Entry e) {
        return ("{\"payment\":\"" + e.payment() + "\",\"amount\":" + e.amount() + ",\"currency\":\"" + e.currency()
            + "\"}").getBytes(StandardCharsets.UTF_8);
    }

    /** RABBITMQ_URI (default the local RabbitMQ), else an embedded AMQP broker. */
    final class Rabbit implements DemoBroker {
        private final String wanted;
        private final String uri;
        private final String queue;
        private final String exchange;

        Rabbit(String run) {
            String configured = System.getenv("RABBITMQ_URI");
            this.wanted = configured == null || configured.isBlank() ? TestRabbit.DEFAULT_URI : configured;
            this.uri = TestRabbit.resolve(wanted);
            this.queue = "payments.ledger.demo-" + run;
            this.exchange = "payments.demo-" + run;
        }

        @Override
        public Map<String, Object> properties() {
            return Map.of("idempotency.rabbitmq.uri", uri, "payments.messaging.exchange", exchange,
                "idempotency.rabbitmq.consumers.ledger.queue", queue);
        }

        @Override
        public void deliverAgain(List<Ledger.Entry> entries) throws Exception {
            try (Connection c = connection(); Channel ch = c.createChannel()) {
                ch.confirmSelect();
                for (Ledger.Entry e : entries) {
                    ch.basicPublish("", queue, new AMQP.BasicProperties.Builder().messageId(e.messageId())
                        .contentType("application/json").deliveryMode(2).build(), body(e));
                }
                ch.waitForConfirmsOrDie(10_000);
            }
        }

        @Override
        public boolean caughtUp() {
            try (Connection c = connection(); Channel ch = c.createChannel()) {
                return ch.messageCount(queue) == 0 && ch.messageCount(queue + ".retry") == 0;
            } catch (Exception e) {
                return false;
            }
        }

        @Override
        public String describe() {
            return uri.equals(wanted) ? "RabbitMQ at " + uri.replaceFirst("//[^@]*@", "//")
                : "an embedded AMQP broker, as no RabbitMQ answered";
        }

        private Connection connection() throws Exception {
            ConnectionFactory f = new ConnectionFactory();
            f.setUri(uri);
            f.setConnectionTimeout(1000);
            return f.newConnection("payments-demo");
        }

        @Override
        public void close() {
            try (Connection c = connection()) {
                for (String q : List.of(queue, queue + ".retry", queue + ".dead")) {
                    try (Channel ch = c.createChannel()) {
                        ch.queueDelete(q);
                    }
                }
                for (String x : List.of(queue + ".dlx", exchange)) {
                    try (Channel ch = c.createChannel()) {
                        ch.exchangeDelete(x);
                    }
                }
            } catch (Exception e) {
                // the broker is gone already: nothing to clean up
            }
        }
    }

    /** KAFKA_BOOTSTRAP_SERVERS (default the local Kafka on 9092), else an embedded KRaft broker. */
    final class Kafka implements DemoBroker {
        private final String bootstrap;
        private final EmbeddedKafkaBroker embedded;
        private final String topic;
        private final String group;

        Kafka(String run) {
            String configured = System.getenv("KAFKA_BOOTSTRAP_SERVERS");
            String wanted = configured == null || configured.isBlank() ? "127.0.0.1:9092" : configured;
            if (TestKafka.answers(wanted)) {
                this.embedded = null;
                this.bootstrap = wanted;
            } else {
                this.embedded = EmbeddedKafkaBroker.start();
                this.bootstrap = embedded.bootstrapServers();
            }
            this.topic = "payments.demo-" + run;
            this.group = "payments.ledger.demo-" + run;
            TestKafka.createTopics(bootstrap, 3, topic);
        }

        @Override
        public Map<String, Object> properties() {
            return Map.of("idempotency.kafka.bootstrap-servers", bootstrap, "payments.messaging.exchange", topic,
                "idempotency.kafka.consumers.ledger.group-id", group);
        }

        @Override
        public void deliverAgain(List<Ledger.Entry> entries) throws Exception {
            try (KafkaProducer<byte[], byte[]> p = new KafkaProducer<>(Map.of(ProducerConfig.BOOTSTRAP_SERVERS_CONFIG,
                bootstrap, ProducerConfig.KEY_SERIALIZER_CLASS_CONFIG, ByteArraySerializer.class,
                ProducerConfig.VALUE_SERIALIZER_CLASS_CONFIG, ByteArraySerializer.class))) {
                for (Ledger.Entry e : entries) {
                    ProducerRecord<byte[], byte[]> r = new ProducerRecord<>(topic,
                        e.payment().getBytes(StandardCharsets.UTF_8), body(e));
                    r.headers().add(KafkaHeaders.MESSAGE_ID, e.messageId().getBytes(StandardCharsets.UTF_8));
                    r.headers().add(KafkaHeaders.CONTENT_TYPE, "application/json".getBytes(StandardCharsets.UTF_8));
                    p.send(r).get(10, TimeUnit.SECONDS);
                }
            }
        }

        @Override
        public boolean caughtUp() {
            try (Admin admin = admin()) {
                Map<TopicPartition, OffsetAndMetadata> committed = admin.listConsumerGroupOffsets(group)
                    .partitionsToOffsetAndMetadata().get(5, TimeUnit.SECONDS);
                Map<TopicPartition, OffsetSpec> latest = new HashMap<>();
                for (int i = 0; i < 3; i++) {
                    latest.put(new TopicPartition(topic, i), OffsetSpec.latest());
                }
                var ends = admin.listOffsets(latest).all().get(5, TimeUnit.SECONDS);
                return ends.entrySet().stream().allMatch(e -> e.getValue().offset() == 0
                    || (committed.get(e.getKey()) != null && committed.get(e.getKey()).offset() >= e.getValue().offset()));
            } catch (Exception e) {
                return false;
            }
        }

        @Override
        public String describe() {
            return embedded == null ? "Kafka at " + bootstrap : "an embedded Kafka broker, as no Kafka answered";
        }

        private Admin admin() {
            // the API timeout may not be shorter than the request timeout (30 s by default): the client refuses to start
            return Admin.create(Map.of(AdminClientConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap,
                AdminClientConfig.REQUEST_TIMEOUT_MS_CONFIG, 5000, AdminClientConfig.DEFAULT_API_TIMEOUT_MS_CONFIG, 5000));
        }

        @Override
        public void close() {
            if (embedded != null) {
                embedded.close();
                return;
            }
            try (Admin admin = admin()) {
                admin.deleteTopics(List.of(topic, topic + ".dead")).all().get(5, TimeUnit.SECONDS);
                admin.deleteConsumerGroups(List.of(group)).all().get(5, TimeUnit.SECONDS);
            } catch (Exception e) {
                // gone already
            }
        }
    }
}
