package dev.idempotency.examples.client;

import dev.idempotency.examples.ledger.Ledger;
import dev.idempotency.examples.payments.Application;
import dev.idempotency.messaging.OutboxStore;
import io.micronaut.context.ApplicationContext;
import io.micronaut.runtime.server.EmbeddedServer;

import java.net.URI;
import java.util.HashMap;
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
 * for the service. It publishes to, and its ledger consumes from, a {@link DemoBroker}: the RabbitMQ at
 * {@code RABBITMQ_URI} (default {@code amqp://guest:guest@127.0.0.1:5672}), or with {@code kafka} the
 * Kafka at {@code KAFKA_BOOTSTRAP_SERVERS} (default {@code 127.0.0.1:9092}, the service's
 * {@code kafka} environment), when one answers there, else an embedded broker started for the run;
 * with a topology of the run's own, deleted afterwards. {@link #close()} stops it.
 */
final class InProcessPaymentsService implements AutoCloseable {

    private final ApplicationContext context;
    private final EmbeddedServer server;
    private final DemoBroker broker;

    private InProcessPaymentsService(ApplicationContext context, EmbeddedServer server, DemoBroker broker) {
        this.context = context;
        this.server = server;
        this.broker = broker;
    }

    /** @return the running service, its asynchronous half on RabbitMQ */
    static InProcessPaymentsService start() {
        return start("rabbitmq");
    }

    /**
     * @param brokerName {@code rabbitmq} or {@code kafka} ({@link DemoSettings#BROKERS})
     * @return the running service
     * @throws RuntimeException when it cannot start
     */
    static InProcessPaymentsService start(String brokerName) {
        // a run of its own on the broker: the demo never competes with a service that consumes payments.ledger
        String run = UUID.randomUUID().toString().substring(0, 8);
        DemoBroker broker = DemoBroker.start(brokerName, run);
        Map<String, Object> properties = new HashMap<>(broker.properties());
        // over the service's own settings and MICRONAUT_SERVER_PORT: loopback only, a free port
        properties.put("micronaut.server.host", "127.0.0.1");
        properties.put("micronaut.server.port", -1);
        properties.put("idempotency.outbox.poll-interval", "50ms");
        ApplicationContext context = null;
        try {
            var builder = ApplicationContext.builder()
                .mainClass(Application.class)
                .deduceEnvironment(false)
                .banner(false)
                .properties(properties);
            if (brokerName.equals("kafka")) {
                builder.environments("kafka");
            }
            context = builder.start();
            EmbeddedServer server = context.getBean(EmbeddedServer.class);
            server.start();
            return new InProcessPaymentsService(context, server, broker);
        } catch (RuntimeException e) {
            if (context != null) {
                context.close();
            }
            broker.close();
            throw e;
        }
    }

    /** @return the broker of the asynchronous half */
    DemoBroker broker() {
        return broker;
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
        broker.close(); // the run's queues, exchange or topic go with it
    }
}
