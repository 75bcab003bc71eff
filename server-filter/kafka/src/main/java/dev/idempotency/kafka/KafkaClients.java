package dev.idempotency.kafka;

import jakarta.inject.Singleton;
import io.micronaut.context.annotation.Requires;
import org.apache.kafka.clients.CommonClientConfigs;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AdminClientConfig;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.CooperativeStickyAssignor;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.common.serialization.ByteArrayDeserializer;
import org.apache.kafka.common.serialization.ByteArraySerializer;

import java.util.HashMap;
import java.util.Map;
import java.util.Set;

/** Makes the module's Kafka clients from its settings; no client is made before it is asked for. */
@Singleton
@Requires(property = KafkaConfigurationProperties.PREFIX + ".enabled", notEquals = "false")
final class KafkaClients {

    /** Properties the module's guarantees rest on; the application cannot override them. */
    static final Set<String> FIXED = Set.of(ProducerConfig.ENABLE_IDEMPOTENCE_CONFIG, ProducerConfig.ACKS_CONFIG,
        ConsumerConfig.ENABLE_AUTO_COMMIT_CONFIG, ConsumerConfig.ISOLATION_LEVEL_CONFIG,
        ProducerConfig.KEY_SERIALIZER_CLASS_CONFIG, ProducerConfig.VALUE_SERIALIZER_CLASS_CONFIG,
        ConsumerConfig.KEY_DESERIALIZER_CLASS_CONFIG, ConsumerConfig.VALUE_DESERIALIZER_CLASS_CONFIG,
        CommonClientConfigs.BOOTSTRAP_SERVERS_CONFIG);

    private final KafkaConfigurationProperties config;

    /**
     * @param properties Kafka client properties from a setting
     * @param setting    the setting's name, for the message
     * @return an unmodifiable copy
     * @throws IllegalArgumentException when one of them is {@linkplain #FIXED fixed}
     */
    static Map<String, String> notFixed(Map<String, String> properties, String setting) {
        Map<String, String> copy = Map.copyOf(properties == null ? Map.of() : properties);
        for (String k : copy.keySet()) {
            if (FIXED.contains(k)) {
                throw new IllegalArgumentException(setting + "." + k + " cannot be set: the module's"
                    + " exactly-once guarantees rest on its own value (" + FIXED + " are fixed)");
            }
        }
        return copy;
    }

    KafkaClients(KafkaConfigurationProperties config) {
        this.config = config;
    }

    KafkaConfigurationProperties config() {
        return config;
    }

    private Map<String, Object> common(String clientId) {
        Map<String, Object> p = new HashMap<>(config.getProperties());
        p.put(CommonClientConfigs.BOOTSTRAP_SERVERS_CONFIG, config.getBootstrapServers());
        p.put(CommonClientConfigs.CLIENT_ID_CONFIG, config.getClientId() + "-" + clientId);
        p.put(CommonClientConfigs.REQUEST_TIMEOUT_MS_CONFIG, (int) config.getRequestTimeout().toMillis());
        p.putIfAbsent(CommonClientConfigs.RECONNECT_BACKOFF_MAX_MS_CONFIG, 1000);
        return p;
    }

    /** An idempotent producer: acks from every in-sync replica, no reordering or duplicates on its retries. */
    KafkaProducer<byte[], byte[]> producer(String clientId) {
        Map<String, Object> p = common(clientId);
        p.put(ProducerConfig.ENABLE_IDEMPOTENCE_CONFIG, true);
        p.put(ProducerConfig.ACKS_CONFIG, "all");
        p.putIfAbsent(ProducerConfig.MAX_IN_FLIGHT_REQUESTS_PER_CONNECTION, 5); // the most idempotence keeps in order
        p.put(ProducerConfig.LINGER_MS_CONFIG, (int) config.getLinger().toMillis());
        p.put(ProducerConfig.DELIVERY_TIMEOUT_MS_CONFIG, (int) config.getDeliveryTimeout().toMillis());
        p.put(ProducerConfig.MAX_BLOCK_MS_CONFIG, config.getRequestTimeout().toMillis());
        p.put(ProducerConfig.KEY_SERIALIZER_CLASS_CONFIG, ByteArraySerializer.class);
        p.put(ProducerConfig.VALUE_SERIALIZER_CLASS_CONFIG, ByteArraySerializer.class);
        return new KafkaProducer<>(p);
    }

    /** A consumer that commits by hand, reads only committed records, and gives up few partitions on a rebalance. */
    KafkaConsumer<byte[], byte[]> consumer(KafkaConsumerConfiguration c, int instance) {
        return new KafkaConsumer<>(consumerProperties(c, instance));
    }

    /** @return what {@link #consumer} gives Kafka: the module's properties, the consumer's own over them, then the fixed ones */
    Map<String, Object> consumerProperties(KafkaConsumerConfiguration c, int instance) {
        Map<String, Object> p = common("consumer-" + c.getName() + "-" + instance);
        p.putAll(c.getProperties());
        p.put(ConsumerConfig.GROUP_ID_CONFIG, c.getGroupId());
        p.put(ConsumerConfig.ENABLE_AUTO_COMMIT_CONFIG, false);
        p.put(ConsumerConfig.ISOLATION_LEVEL_CONFIG, "read_committed");
        p.putIfAbsent(ConsumerConfig.AUTO_OFFSET_RESET_CONFIG, "earliest");
        p.put(ConsumerConfig.MAX_POLL_RECORDS_CONFIG, c.getMaxPollRecords());
        p.putIfAbsent(ConsumerConfig.PARTITION_ASSIGNMENT_STRATEGY_CONFIG, CooperativeStickyAssignor.class.getName());
        p.put(ConsumerConfig.DEFAULT_API_TIMEOUT_MS_CONFIG, (int) Math.max(config.getRequestTimeout().toMillis() * 2, 5000));
        p.put(ConsumerConfig.KEY_DESERIALIZER_CLASS_CONFIG, ByteArrayDeserializer.class);
        p.put(ConsumerConfig.VALUE_DESERIALIZER_CLASS_CONFIG, ByteArrayDeserializer.class);
        return p;
    }

    Admin admin(String clientId) {
        Map<String, Object> p = common(clientId);
        p.put(AdminClientConfig.DEFAULT_API_TIMEOUT_MS_CONFIG, (int) config.getRequestTimeout().toMillis());
        return Admin.create(p);
    }
}
