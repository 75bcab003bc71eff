package dev.idempotency.testsupport;

import org.apache.qpid.server.SystemLauncher;

import java.io.IOException;
import java.net.ServerSocket;
import java.net.URL;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.HashMap;
import java.util.Map;

/**
 * An AMQP 0-9-1 broker in this JVM (Apache Qpid Broker-J, in-memory, user guest/guest, the
 * default virtual host), for machines without RabbitMQ and for tests that must stop and restart
 * a broker of their own. Listens on 127.0.0.1 only. Messages live in memory: a stop loses them,
 * like a RabbitMQ that restarts without persistence.
 */
public final class EmbeddedAmqpBroker implements AutoCloseable {

    private static final URL CONFIG = EmbeddedAmqpBroker.class.getResource("qpid-embedded.json");

    private final int port;
    private final Path work;
    private SystemLauncher launcher;

    private EmbeddedAmqpBroker(int port, Path work) {
        this.port = port;
        this.work = work;
    }

    /** Starts a broker on a free port. */
    public static EmbeddedAmqpBroker start() {
        return start(freePort());
    }

    /** Starts a broker on {@code port}, e.g. the port of one stopped before. */
    public static EmbeddedAmqpBroker start(int port) {
        try {
            EmbeddedAmqpBroker broker = new EmbeddedAmqpBroker(port, Files.createTempDirectory("idempotency-qpid"));
            broker.launch();
            return broker;
        } catch (IOException e) {
            throw new IllegalStateException("cannot create the embedded broker's work directory", e);
        }
    }

    private void launch() {
        Map<String, Object> context = new HashMap<>();
        context.put("qpid.amqp_port", String.valueOf(port));
        context.put("qpid.work_dir", work.toString());
        context.put("qpid.broker.defaultPreferenceStoreAttributes", "{\"type\": \"Noop\"}");
        Map<String, Object> attributes = new HashMap<>();
        attributes.put("type", "Memory");
        // a file of its own: the configuration may sit in a jar that Broker-J's URL handling cannot open
        // (in a class loader of its own, e.g. under exec:java)
        Path config = work.resolve("initial-config.json");
        try (java.io.InputStream in = CONFIG.openStream()) {
            Files.copy(in, config, java.nio.file.StandardCopyOption.REPLACE_EXISTING);
        } catch (IOException e) {
            throw new IllegalStateException("cannot write the embedded broker's configuration", e);
        }
        attributes.put("initialConfigurationLocation", config.toUri().toString());
        // and no classpath: URL for its system properties either, for the same reason
        Path systemProperties = work.resolve("system.properties");
        try {
            Files.writeString(systemProperties, "");
        } catch (IOException e) {
            throw new IllegalStateException("cannot write the embedded broker's system properties", e);
        }
        attributes.put("initialSystemPropertiesLocation", systemProperties.toUri().toString());
        attributes.put("startupLoggedToSystemOut", false);
        attributes.put("context", context);
        SystemLauncher l = new SystemLauncher();
        try {
            l.startup(attributes);
        } catch (Exception e) {
            throw new IllegalStateException("the embedded AMQP broker did not start on port " + port + ": " + e, e);
        }
        launcher = l;
        if (!TestRabbit.answers(uri())) { // Broker-J reports some start-up failures only on its own output
            close();
            throw new IllegalStateException("the embedded AMQP broker did not come up on port " + port);
        }
    }

    /** @return {@code amqp://guest:guest@127.0.0.1:<port>} */
    public String uri() {
        return "amqp://guest:guest@127.0.0.1:" + port;
    }

    public int port() {
        return port;
    }

    /** Stops the broker (its messages are gone); {@link #start(int)} with {@link #port()} brings one back. */
    @Override
    public synchronized void close() {
        if (launcher != null) {
            launcher.shutdown();
            launcher = null;
        }
    }

    static int freePort() {
        try (ServerSocket s = new ServerSocket(0)) {
            return s.getLocalPort();
        } catch (IOException e) {
            throw new IllegalStateException(e);
        }
    }
}
