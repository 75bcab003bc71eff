package dev.idempotency.examples.client;

import com.rabbitmq.client.Channel;
import com.rabbitmq.client.Connection;
import com.rabbitmq.client.ConnectionFactory;
import dev.idempotency.examples.ledger.Ledger;
import dev.idempotency.examples.payments.Application;
import dev.idempotency.messaging.OutboxStore;
import dev.idempotency.testsupport.TestRabbit;
import io.micronaut.context.ApplicationContext;
import io.micronaut.runtime.server.EmbeddedServer;

import java.net.URI;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import java.util.Set;
import java.util.TreeSet;

/**
 * The payments example ({@code examples/payments-service}) started inside this JVM, as its own
 * {@code Application} would start it, but on {@code 127.0.0.1} and a free port: the demo never
 * clashes with a service already running on 8080. It reads the service's own configuration
 * ({@code application.properties}: the in-memory idempotency store and business data); only a
 * {@code MICRONAUT_ENVIRONMENTS} set in the shell (e.g. {@code redis}) changes that, as it would
 * for the service. It publishes to, and its ledger consumes from, the RabbitMQ at
 * {@code RABBITMQ_URI} (default {@code amqp://guest:guest@127.0.0.1:5672}) when one answers there,
 * else an embedded AMQP broker started for the run; with an exchange and queue of the run's own,
 * deleted afterwards. {@link #close()} stops it.
 */
final class InProcessPaymentsService implements AutoCloseable {

    private final ApplicationContext context;
    private final EmbeddedServer server;
    private final String broker;
    private final boolean embeddedBroker;
    private final String ledgerQueue;
    private final String exchange;

    private InProcessPaymentsService(ApplicationContext context, EmbeddedServer server, String broker,
                                     boolean embeddedBroker, String ledgerQueue, String exchange) {
        this.context = context;
        this.server = server;
        this.broker = broker;
        this.embeddedBroker = embeddedBroker;
        this.ledgerQueue = ledgerQueue;
        this.exchange = exchange;
    }

    /**
     * @return the running service
     * @throws RuntimeException when it cannot start
     */
    static InProcessPaymentsService start() {
        String configured = System.getenv("RABBITMQ_URI");
        String wanted = configured == null || configured.isBlank() ? TestRabbit.DEFAULT_URI : configured;
        String broker = TestRabbit.resolve(wanted);
        // a run of its own on the broker: the demo never competes with a service that consumes payments.ledger
        String run = UUID.randomUUID().toString().substring(0, 8);
        Map<String, Object> properties = new HashMap<>();
        // over the service's own settings and MICRONAUT_SERVER_PORT: loopback only, a free port
        properties.put("micronaut.server.host", "127.0.0.1");
        properties.put("micronaut.server.port", -1);
        properties.put("idempotency.rabbitmq.uri", broker);
        properties.put("payments.messaging.exchange", "payments.demo-" + run);
        properties.put("idempotency.rabbitmq.consumers.ledger.queue", "payments.ledger.demo-" + run);
        properties.put("idempotency.outbox.poll-interval", "50ms");
        ApplicationContext context = ApplicationContext.builder()
            .mainClass(Application.class)
            .deduceEnvironment(false)
            .banner(false)
            .properties(properties)
            .start();
        try {
            EmbeddedServer server = context.getBean(EmbeddedServer.class);
            server.start();
            return new InProcessPaymentsService(context, server, broker, !broker.equals(wanted),
                "payments.ledger.demo-" + run, "payments.demo-" + run);
        } catch (RuntimeException e) {
            context.close();
            throw e;
        }
    }

    /** @return the AMQP broker the service publishes to and consumes from */
    String broker() {
        return broker;
    }

    /** @return whether that broker is the embedded one, started because no RabbitMQ answered */
    boolean embeddedBroker() {
        return embeddedBroker;
    }

    /** @return the ledger consumer's queue */
    String ledgerQueue() {
        return ledgerQueue;
    }

    /** @return the service's ledger */
    Ledger ledger() {
        return context.getBean(Ledger.class);
    }

    /** @return how many messages wait in the service's outbox */
    long outboxDepth() {
        return context.getBean(OutboxStore.class).depth();
    }

    /** @return e.g. {@code http://127.0.0.1:40123} */
    URI uri() {
        return URI.create("http://127.0.0.1:" + server.getPort());
    }

    /** @return the active Micronaut environments, e.g. {@code [redis]}; empty for the defaults */
    Set<String> environments() {
        return new TreeSet<>(context.getEnvironment().getActiveNames());
    }

    /** Stops the HTTP server (tests use it to make the service vanish mid-run); {@link #close()} still follows. */
    void stop() {
        if (server.isRunning()) {
            server.stop();
        }
    }

    @Override
    public void close() {
        stop();
        if (context.isRunning()) {
            context.close();
        }
        // the run's queues and exchange go with it
        ConnectionFactory f = new ConnectionFactory();
        try {
            f.setUri(broker);
            f.setConnectionTimeout(1000);
            try (Connection c = f.newConnection("payments-demo-cleanup")) {
                for (String q : List.of(ledgerQueue, ledgerQueue + ".retry", ledgerQueue + ".dead")) {
                    try (Channel ch = c.createChannel()) {
                        ch.queueDelete(q);
                    }
                }
                for (String x : List.of(ledgerQueue + ".dlx", exchange)) {
                    try (Channel ch = c.createChannel()) {
                        ch.exchangeDelete(x);
                    }
                }
            }
        } catch (Exception e) {
            // the broker is gone already: nothing to clean up
        }
    }
}
