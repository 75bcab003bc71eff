package dev.idempotency.testsupport;

import com.rabbitmq.client.Channel;
import com.rabbitmq.client.Connection;
import com.rabbitmq.client.ConnectionFactory;
import com.rabbitmq.client.GetResponse;
import com.rabbitmq.client.MessageProperties;
import org.junit.jupiter.api.DisplayName;
import org.junit.jupiter.api.Test;

import java.nio.charset.StandardCharsets;

import static org.assertj.core.api.Assertions.assertThat;

/** The embedded AMQP broker speaks AMQP 0-9-1 as RabbitMQ's client expects, and comes back on its port. */
class EmbeddedAmqpBrokerTest {

    private static Connection connect(String uri) throws Exception {
        ConnectionFactory f = new ConnectionFactory();
        f.setUri(uri);
        f.setAutomaticRecoveryEnabled(false);
        return f.newConnection();
    }

    @Test
    @DisplayName("M6: publish with confirms, get, acknowledge; stopped it refuses, restarted on its port it answers")
    void speaksAmqp091() throws Exception {
        EmbeddedAmqpBroker broker = EmbeddedAmqpBroker.start();
        try (Connection c = connect(broker.uri()); Channel ch = c.createChannel()) {
            ch.confirmSelect();
            ch.queueDeclare("probe", true, false, false, null);
            ch.basicPublish("", "probe", MessageProperties.PERSISTENT_TEXT_PLAIN, "hello".getBytes(StandardCharsets.UTF_8));
            assertThat(ch.waitForConfirms(5000)).isTrue();
            GetResponse r = ch.basicGet("probe", false);
            assertThat(new String(r.getBody(), StandardCharsets.UTF_8)).isEqualTo("hello");
            ch.basicAck(r.getEnvelope().getDeliveryTag(), false);
        }
        int port = broker.port();
        broker.close();
        assertThat(TestRabbit.answers(broker.uri())).isFalse();
        EmbeddedAmqpBroker again = EmbeddedAmqpBroker.start(port);
        try {
            assertThat(TestRabbit.answers(again.uri())).isTrue();
        } finally {
            again.close();
        }
    }
}
