package dev.idempotency.endtoend;

import com.rabbitmq.client.AMQP;
import com.rabbitmq.client.Channel;
import com.rabbitmq.client.Connection;
import com.rabbitmq.client.ConnectionFactory;
import dev.idempotency.testsupport.Stores;
import dev.idempotency.testsupport.TcpProxy;
import dev.idempotency.testsupport.TestRabbit;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;

import java.net.URI;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.UUID;

/**
 * {@link ExactlyOnceRun} on RabbitMQ (CONTRACT M4, M5): the machine's broker, or the embedded one
 * where none runs, with the consumers connected through a proxy that the run cuts. A "rebalance"
 * here is a second competing consumer on the queue, then its leaving (its unacknowledged
 * deliveries go back to the queue). A killed consumer has at most its prefetch in flight. Per-key
 * order is not checked: RabbitMQ hands a killed consumer's unacknowledged deliveries out again,
 * behind later ones, and competing consumers take from one queue in parallel, so the broker
 * promises no order under these faults (the messaging guide says so).
 */
class ExactlyOnceOnRabbitTest {

    private static final int PREFETCH = 10;
    private static final List<String> QUEUES = new ArrayList<>();
    private static URI broker;
    private static TcpProxy proxy;

    @BeforeAll
    static void startProxy() throws Exception {
        broker = URI.create(TestRabbit.uri());
        proxy = new TcpProxy(broker.getHost(), broker.getPort());
    }

    @AfterAll
    static void cleanUp() throws Exception {
        proxy.close();
        try (Connection c = connect(); Channel ch = c.createChannel()) {
            for (String q : QUEUES) {
                ch.queueDelete(q);
                ch.queueDelete(q + ".retry");
                ch.queueDelete(q + ".dead");
                ch.exchangeDelete(q + ".dlx");
            }
        }
        Stores.removeCreated();
    }

    @ParameterizedTest(name = "M4/M5 on RabbitMQ: {0}: 10,000 deliveries, 20 % duplicates, 3 kills, a consumer joining"
        + " and leaving, a cut: each once")
    @EnumSource(value = Stores.class, names = {"REDIS", "POSTGRES"})
    void exactlyOnce(Stores store) throws Exception {
        String queue = "exactly-once-" + UUID.randomUUID();
        QUEUES.add(queue);
        ExactlyOnceRun.run(new Wire(), store, queue);
    }

    private static Connection connect() throws Exception {
        ConnectionFactory f = new ConnectionFactory();
        f.setUri(broker);
        f.setAutomaticRecoveryEnabled(false);
        return f.newConnection("exactly-once-test");
    }

    private static final class Wire implements ExactlyOnceRun.Wire {
        @Override
        public String name() {
            return "RabbitMQ";
        }

        @Override
        public void create(String queue) throws Exception {
            try (Connection c = connect(); Channel ch = c.createChannel()) {
                ch.queueDeclare(queue, true, false, false, null); // as the consumer declares it
            }
        }

        @Override
        public Map<String, String> consumerProperties(String queue, boolean transactional) {
            URI throughProxy = URI.create(broker.getScheme() + "://" + broker.getRawUserInfo() + "@127.0.0.1:"
                + proxy.port() + (broker.getRawPath() == null ? "" : broker.getRawPath()));
            Map<String, String> props = new LinkedHashMap<>();
            props.put("idempotency.kafka.enabled", "false");
            props.put("idempotency.rabbitmq.uri", throughProxy.toString());
            props.put("idempotency.rabbitmq.recovery-interval", "1s");
            props.put("idempotency.rabbitmq.consumers.ledger.queue", queue);
            props.put("idempotency.rabbitmq.consumers.ledger.prefetch", String.valueOf(PREFETCH));
            props.put("idempotency.rabbitmq.consumers.ledger.concurrency", "1");
            props.putAll(ExactlyOnceRun.consumerSettings("idempotency.rabbitmq.consumers.ledger.", transactional));
            return props;
        }

        @Override
        public ExactlyOnceRun.Publisher publisher(String queue) throws Exception {
            Connection c = connect();
            Channel ch = c.createChannel();
            ch.confirmSelect();
            return new ExactlyOnceRun.Publisher() {
                @Override
                public void send(String key, String messageId, String body) throws Exception {
                    ch.basicPublish("", queue, true, new AMQP.BasicProperties.Builder().messageId(messageId)
                        .contentType("text/plain").deliveryMode(2).build(), body.getBytes(StandardCharsets.UTF_8));
                }

                @Override
                public void flush() throws Exception {
                    ch.waitForConfirmsOrDie(30_000);
                }

                @Override
                public void close() throws Exception {
                    c.close();
                }
            };
        }

        @Override
        public void cut() throws Exception {
            proxy.stop();
        }

        @Override
        public void restore() throws Exception {
            proxy.start();
        }

        @Override
        public int inFlightPerConsumer() {
            return PREFETCH;
        }

        @Override
        public boolean ordersPerKey() {
            return false;
        }
    }
}
