package dev.idempotency.testsupport;

import kafka.server.KafkaConfig;
import kafka.server.KafkaRaftServer;
import org.apache.kafka.common.Uuid;
import org.apache.kafka.common.utils.Time;

import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.PrintStream;
import java.io.UncheckedIOException;
import java.net.ServerSocket;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Comparator;
import java.util.Properties;
import java.util.stream.Stream;

/**
 * A one-node Kafka in this JVM, in KRaft mode (broker and controller in one), for tests when no
 * Kafka is configured. Its log directory is a fresh temporary one, formatted with the storage
 * tool's own code, and removed at {@link #close()}.
 *
 * <p>Clients reach it through a {@link TcpProxy}: the broker advertises the proxy's port, so every
 * connection a client makes (bootstrap and after) goes through it, and {@link #cut()} /
 * {@link #restore()} take the broker off the network and back, as a broken network path would.
 * {@link #withDelay} puts a delay line in that path instead, for benchmarks that must not be
 * bound by this machine's cores.
 *
 * <p>Topics are not created on first use ({@code auto.create.topics.enable=false}), as on a
 * production cluster that refuses unknown topics; tests create theirs with the admin client.
 */
public final class EmbeddedKafkaBroker implements AutoCloseable {

    private final Path dir;
    private final KafkaRaftServer server;
    private final TcpProxy proxy;

    private EmbeddedKafkaBroker(Path dir, KafkaRaftServer server, TcpProxy proxy) {
        this.dir = dir;
        this.server = server;
        this.proxy = proxy;
    }

    /** Starts a broker whose clients' path goes straight through. */
    public static EmbeddedKafkaBroker start() {
        return withDelay(java.time.Duration.ZERO);
    }

    /**
     * Starts a broker whose clients' path delays every chunk by {@code delay} each way.
     *
     * @param delay zero for none
     */
    public static EmbeddedKafkaBroker withDelay(java.time.Duration delay) {
        try {
            Path dir = Files.createTempDirectory("idempotency-kafka-");
            int brokerPort = freePort();
            int controllerPort = freePort();
            TcpProxy proxy = new TcpProxy("127.0.0.1", brokerPort, delay);
            Properties p = new Properties();
            p.put("process.roles", "broker,controller");
            p.put("node.id", "1");
            p.put("controller.quorum.voters", "1@127.0.0.1:" + controllerPort);
            p.put("listeners", "PLAINTEXT://127.0.0.1:" + brokerPort + ",CONTROLLER://127.0.0.1:" + controllerPort);
            p.put("advertised.listeners", "PLAINTEXT://127.0.0.1:" + proxy.port());
            p.put("controller.listener.names", "CONTROLLER");
            p.put("inter.broker.listener.name", "PLAINTEXT");
            p.put("listener.security.protocol.map", "PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT");
            p.put("log.dirs", dir.resolve("log").toString());
            p.put("auto.create.topics.enable", "false");
            p.put("num.partitions", "1");
            p.put("offsets.topic.replication.factor", "1");
            p.put("offsets.topic.num.partitions", "4");
            p.put("transaction.state.log.replication.factor", "1");
            p.put("transaction.state.log.min.isr", "1");
            p.put("transaction.state.log.num.partitions", "4");
            p.put("share.coordinator.state.topic.replication.factor", "1");
            p.put("share.coordinator.state.topic.min.isr", "1");
            p.put("group.initial.rebalance.delay.ms", "0");
            p.put("log.flush.interval.messages", String.valueOf(Long.MAX_VALUE)); // the page cache is durable enough here
            Path config = dir.resolve("server.properties");
            try (var out = Files.newOutputStream(config)) {
                p.store(out, "idempotency tests: embedded KRaft broker");
            }
            format(config);
            KafkaRaftServer server = new KafkaRaftServer(new KafkaConfig(p, false), Time.SYSTEM);
            server.startup();
            return new EmbeddedKafkaBroker(dir, server, proxy);
        } catch (IOException e) {
            throw new UncheckedIOException("could not start an embedded Kafka broker", e);
        }
    }

    private static void format(Path config) {
        ByteArrayOutputStream out = new ByteArrayOutputStream();
        int rc;
        try (PrintStream print = new PrintStream(out, true, StandardCharsets.UTF_8)) {
            rc = kafka.tools.StorageTool.execute(new String[] {"format", "-t", Uuid.randomUuid().toString(), "-c",
                config.toString()}, print);
        }
        if (rc != 0) {
            throw new IllegalStateException("formatting the embedded Kafka's storage failed (" + rc + "): "
                + out.toString(StandardCharsets.UTF_8));
        }
    }

    /** @return the bootstrap servers, e.g. {@code 127.0.0.1:40123} */
    public String bootstrapServers() {
        return "127.0.0.1:" + proxy.port();
    }

    /** Cuts every client connection and refuses new ones, until {@link #restore()}. */
    public void cut() {
        try {
            proxy.stop();
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }

    /** Lets clients reach the broker again. */
    public void restore() {
        try {
            proxy.start();
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }

    @Override
    public void close() {
        try {
            proxy.close();
        } catch (IOException ignored) {
            // closing anyway
        }
        server.shutdown();
        server.awaitShutdown();
        try (Stream<Path> files = Files.walk(dir)) {
            files.sorted(Comparator.reverseOrder()).forEach(f -> f.toFile().delete());
        } catch (IOException ignored) {
            // a temporary directory
        }
    }

    private static int freePort() throws IOException {
        try (ServerSocket s = new ServerSocket(0)) {
            return s.getLocalPort();
        }
    }
}
