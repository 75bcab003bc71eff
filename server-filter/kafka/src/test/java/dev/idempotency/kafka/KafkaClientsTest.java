package dev.idempotency.kafka;

import org.junit.jupiter.api.DisplayName;
import org.junit.jupiter.api.Test;

import java.util.Map;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/**
 * CONTRACT M8: what the module gives Kafka's clients. A consumer's own properties reach its
 * clients only, over the module-wide ones; the properties the exactly-once guarantees rest on
 * cannot be set at either level.
 */
class KafkaClientsTest {

    private static KafkaConsumerConfiguration ledger(Map<String, String> properties) {
        KafkaConsumerConfiguration c = new KafkaConsumerConfiguration("ledger");
        c.setProperties(properties);
        return c;
    }

    @Test
    @DisplayName("M8: consumers.<name>.properties reach that consumer, over the module's properties")
    void consumerPropertiesOverTheModules() {
        KafkaConfigurationProperties module = new KafkaConfigurationProperties();
        module.setBootstrapServers("127.0.0.1:9092");
        module.setProperties(Map.of("session.timeout.ms", "45000", "security.protocol", "PLAINTEXT"));
        KafkaClients clients = new KafkaClients(module);

        Map<String, Object> p = clients.consumerProperties(ledger(Map.of("session.timeout.ms", "6000",
            "heartbeat.interval.ms", "2000")), 0);

        assertThat(p).containsEntry("session.timeout.ms", "6000").containsEntry("heartbeat.interval.ms", "2000")
            .containsEntry("security.protocol", "PLAINTEXT").containsEntry("enable.auto.commit", false)
            .containsEntry("group.id", "ledger");
        assertThat(clients.consumerProperties(new KafkaConsumerConfiguration("audit"), 0))
            .containsEntry("session.timeout.ms", "45000").doesNotContainKey("heartbeat.interval.ms");
    }

    @Test
    @DisplayName("M8: a consumer cannot set what the module's guarantees rest on, and the message names the setting")
    void fixedPropertiesAreRefused() {
        assertThatThrownBy(() -> ledger(Map.of("enable.auto.commit", "true")))
            .isInstanceOf(IllegalArgumentException.class)
            .hasMessageContaining("idempotency.kafka.consumers.ledger.properties.enable.auto.commit cannot be set");
        assertThatThrownBy(() -> ledger(Map.of("isolation.level", "read_uncommitted")))
            .hasMessageContaining("isolation.level cannot be set");
    }
}
