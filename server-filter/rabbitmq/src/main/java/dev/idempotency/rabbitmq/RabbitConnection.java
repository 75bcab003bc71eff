package dev.idempotency.rabbitmq;

import com.rabbitmq.client.Connection;
import com.rabbitmq.client.ConnectionFactory;
import io.micronaut.context.annotation.Requires;
import jakarta.annotation.PreDestroy;
import jakarta.inject.Singleton;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import java.io.IOException;
import java.util.concurrent.TimeoutException;
import java.util.concurrent.atomic.AtomicInteger;

/**
 * The module's one connection to RabbitMQ, opened on first use (never in the constructor) and
 * recovered by the client itself when it is lost (its channels, consumers, exchanges, queues and
 * bindings included, every {@code recovery-interval}). A first connection that fails is tried
 * again on the next use.
 */
@Singleton
@Requires(property = RabbitConfigurationProperties.PREFIX + ".enabled", notEquals = "false")
final class RabbitConnection implements AutoCloseable {

    private static final Logger LOG = LoggerFactory.getLogger(RabbitConnection.class);

    private final RabbitConfigurationProperties config;
    private Connection connection; // guarded by this
    private boolean closed; // guarded by this

    RabbitConnection(RabbitConfigurationProperties config) {
        this.config = config;
    }

    /**
     * @return the connection (open, or recovering)
     * @throws IOException when there is none and none can be opened now
     */
    synchronized Connection get() throws IOException {
        if (closed) {
            throw new IOException("the RabbitMQ connection is closed");
        }
        if (connection == null) {
            ConnectionFactory factory = new ConnectionFactory();
            try {
                factory.setUri(config.getUri());
            } catch (Exception e) {
                throw new IOException("bad " + RabbitConfigurationProperties.PREFIX + ".uri: " + e.getMessage(), e);
            }
            factory.setConnectionTimeout((int) config.getConnectionTimeout().toMillis());
            factory.setHandshakeTimeout((int) Math.max(config.getConnectionTimeout().toMillis(), 5000));
            factory.setRequestedHeartbeat((int) Math.max(1, config.getHeartbeat().toSeconds()));
            factory.setAutomaticRecoveryEnabled(true);
            factory.setTopologyRecoveryEnabled(true);
            factory.setNetworkRecoveryInterval(config.getRecoveryInterval().toMillis());
            AtomicInteger n = new AtomicInteger();
            factory.setThreadFactory(r -> {
                Thread t = new Thread(r, "idempotency-rabbitmq-" + n.incrementAndGet());
                t.setDaemon(true);
                return t;
            });
            try {
                connection = factory.newConnection("idempotency");
            } catch (TimeoutException e) {
                throw new IOException("RabbitMQ at " + where() + " did not answer in time", e);
            }
            LOG.info("idempotency: connected to RabbitMQ at {}", where());
        }
        return connection;
    }

    /** @return the broker's address without credentials, for messages */
    String where() {
        return config.getUri().getHost() + ":" + (config.getUri().getPort() == -1 ? 5672 : config.getUri().getPort());
    }

    @PreDestroy
    @Override
    public synchronized void close() {
        closed = true;
        if (connection != null) {
            try {
                connection.close(2000);
            } catch (Exception e) {
                // closing on the way out
            }
            connection = null;
        }
    }
}
