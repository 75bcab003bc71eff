package dev.idempotency.testsupport;

import com.rabbitmq.client.Connection;
import com.rabbitmq.client.ConnectionFactory;

/**
 * The AMQP broker the tests share (see ARCHITECTURE "Real services in tests"): the RabbitMQ at
 * {@code IDEMPOTENCY_TEST_RABBITMQ_URI} (default {@code amqp://guest:guest@127.0.0.1:5672}) when
 * it answers, otherwise an {@link EmbeddedAmqpBroker} started for this JVM and stopped at its
 * exit. Tests isolate themselves by the names of their queues and exchanges.
 */
public final class TestRabbit {

    public static final String ENV = "IDEMPOTENCY_TEST_RABBITMQ_URI";
    public static final String DEFAULT_URI = "amqp://guest:guest@127.0.0.1:5672";

    private static String shared;

    private TestRabbit() {
    }

    /** @return the URI of the shared test broker, starting an embedded one when none answers */
    public static synchronized String uri() {
        if (shared == null) {
            String configured = System.getenv(ENV);
            shared = resolve(configured == null || configured.isBlank() ? DEFAULT_URI : configured);
        }
        return shared;
    }

    /** @return {@code configured} when a broker answers there, else the URI of an embedded broker started now */
    public static String resolve(String configured) {
        if (answers(configured)) {
            return configured;
        }
        EmbeddedAmqpBroker broker = EmbeddedAmqpBroker.start();
        Runtime.getRuntime().addShutdownHook(new Thread(broker::close, "test-amqp-stop"));
        return broker.uri();
    }

    /** @return whether an AMQP broker accepts a connection at {@code uri} within a second */
    public static boolean answers(String uri) {
        ConnectionFactory f = new ConnectionFactory();
        try {
            f.setUri(uri);
            f.setConnectionTimeout(1000);
            f.setHandshakeTimeout(2000);
            f.setAutomaticRecoveryEnabled(false);
            try (Connection c = f.newConnection("idempotency-test-probe")) {
                return c.isOpen();
            }
        } catch (Exception e) {
            return false;
        }
    }
}
