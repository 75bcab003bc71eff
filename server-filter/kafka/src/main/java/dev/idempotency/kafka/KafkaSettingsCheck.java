package dev.idempotency.kafka;

import dev.idempotency.messaging.OutboxConfigurationProperties;
import io.micronaut.context.BeanProvider;
import io.micronaut.context.annotation.Context;
import io.micronaut.context.annotation.Requires;
import io.micronaut.context.exceptions.ConfigurationException;

import java.util.HashMap;
import java.util.List;
import java.util.Map;

/**
 * Refuses, at startup and in the module's words, Kafka settings that contradict each other or the
 * outbox's (CONTRACT M8): a producer that could still be sending a batch after the relay gave up
 * on it, a delivery timeout Kafka itself would refuse, two consumers sharing a group on one topic.
 */
@Context
@Requires(property = KafkaConfigurationProperties.PREFIX + ".enabled", notEquals = "false")
final class KafkaSettingsCheck {

    KafkaSettingsCheck(KafkaConfigurationProperties kafka, BeanProvider<OutboxConfigurationProperties> outbox,
                       List<KafkaConsumerConfiguration> consumers) {
        String p = KafkaConfigurationProperties.PREFIX;
        if (kafka.getDeliveryTimeout().compareTo(kafka.getRequestTimeout().plus(kafka.getLinger())) < 0) {
            throw new ConfigurationException(p + ".delivery-timeout (" + kafka.getDeliveryTimeout() + ") must be at least "
                + p + ".request-timeout plus " + p + ".linger (" + kafka.getRequestTimeout().plus(kafka.getLinger())
                + "): raise delivery-timeout or lower request-timeout");
        }
        if (outbox.isPresent()) {
            OutboxConfigurationProperties o = outbox.get();
            if (kafka.getDeliveryTimeout().plus(kafka.getRequestTimeout()).compareTo(o.getSendTimeout()) >= 0) {
                throw new ConfigurationException(p + ".delivery-timeout plus " + p + ".request-timeout ("
                    + kafka.getDeliveryTimeout().plus(kafka.getRequestTimeout()) + ") must be shorter than "
                    + OutboxConfigurationProperties.PREFIX + ".send-timeout (" + o.getSendTimeout() + "): otherwise the"
                    + " relay gives up on batches the producer is still sending, and sends them twice. Lower"
                    + " delivery-timeout or raise send-timeout");
            }
        }
        Map<String, String> seen = new HashMap<>();
        for (KafkaConsumerConfiguration c : consumers) {
            for (String topic : c.getTopics()) {
                String other = seen.put(c.getGroupId() + "\u0000" + topic, c.getName());
                if (other != null) {
                    throw new ConfigurationException("idempotency consumers '" + other + "' and '" + c.getName()
                        + "' both consume " + topic + " in group " + c.getGroupId() + ": they would split its partitions"
                        + " and each see half of the records. Give one of them its own group-id");
                }
            }
        }
    }
}
