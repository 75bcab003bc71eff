package dev.idempotency.examples.client;

import dev.idempotency.examples.payments.Application;
import io.micronaut.context.ApplicationContext;
import io.micronaut.runtime.server.EmbeddedServer;

import java.net.URI;
import java.util.Map;
import java.util.Set;
import java.util.TreeSet;

/**
 * The payments example ({@code examples/payments-service}) started inside this JVM, as its own
 * {@code Application} would start it, but on {@code 127.0.0.1} and a free port: the demo never
 * clashes with a service already running on 8080. It reads the service's own configuration
 * ({@code application.properties}: the in-memory idempotency store and business data); only a
 * {@code MICRONAUT_ENVIRONMENTS} set in the shell (e.g. {@code redis}) changes that, as it would
 * for the service. {@link #close()} stops it.
 */
final class InProcessPaymentsService implements AutoCloseable {

    private final ApplicationContext context;
    private final EmbeddedServer server;

    private InProcessPaymentsService(ApplicationContext context, EmbeddedServer server) {
        this.context = context;
        this.server = server;
    }

    /**
     * @return the running service
     * @throws RuntimeException when it cannot start
     */
    static InProcessPaymentsService start() {
        ApplicationContext context = ApplicationContext.builder()
            .mainClass(Application.class)
            .deduceEnvironment(false)
            .banner(false)
            // over the service's own settings and MICRONAUT_SERVER_PORT: loopback only, a free port
            .properties(Map.of("micronaut.server.host", "127.0.0.1", "micronaut.server.port", -1))
            .start();
        try {
            EmbeddedServer server = context.getBean(EmbeddedServer.class);
            server.start();
            return new InProcessPaymentsService(context, server);
        } catch (RuntimeException e) {
            context.close();
            throw e;
        }
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
    }
}
