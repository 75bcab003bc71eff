package dev.idempotency.rabbitmq;

import dev.idempotency.server.Checks;
import io.micronaut.context.annotation.ConfigurationProperties;

import java.net.URI;
import java.time.Duration;

/**
 * {@code idempotency.rabbitmq.*}: the broker connection of the RabbitMQ module (CONTRACT M6).
 * Consumers are configured under {@code idempotency.rabbitmq.consumers.<name>.*}
 * ({@link RabbitConsumerConfiguration}), exchanges the module declares under
 * {@code idempotency.rabbitmq.exchanges.<name>.*} ({@link RabbitExchangeConfiguration}).
 */
@ConfigurationProperties(RabbitConfigurationProperties.PREFIX)
public class RabbitConfigurationProperties {

    /** The settings' prefix. */
    public static final String PREFIX = "idempotency.rabbitmq";
    public static final String DEFAULT_URI = "amqp://guest:guest@127.0.0.1:5672";
    public static final Duration DEFAULT_CONNECTION_TIMEOUT = Duration.ofSeconds(2);
    public static final Duration DEFAULT_HEARTBEAT = Duration.ofSeconds(10);
    public static final Duration DEFAULT_RECOVERY_INTERVAL = Duration.ofSeconds(1);

    private boolean enabled = true;
    private URI uri = URI.create(DEFAULT_URI);
    private Duration connectionTimeout = DEFAULT_CONNECTION_TIMEOUT;
    private Duration heartbeat = DEFAULT_HEARTBEAT;
    private Duration recoveryInterval = DEFAULT_RECOVERY_INTERVAL;

    public boolean isEnabled() {
        return enabled;
    }

    /**
     * Whether the module connects to RabbitMQ at all: {@code false} removes the outbox's sender
     * and the consumers. Default true.
     *
     * @param enabled whether the module is active
     */
    public void setEnabled(boolean enabled) {
        this.enabled = enabled;
    }

    public URI getUri() {
        return uri;
    }

    /**
     * The broker: {@code amqp://user:password@host:port/vhost} ({@code amqps://} for TLS).
     * Default {@value #DEFAULT_URI}.
     *
     * @param uri an AMQP URI
     */
    public void setUri(URI uri) {
        if (uri == null || uri.getScheme() == null
            || !(uri.getScheme().equals("amqp") || uri.getScheme().equals("amqps"))) {
            throw new IllegalArgumentException(PREFIX + ".uri must be an amqp:// or amqps:// URI, was " + uri);
        }
        this.uri = uri;
    }

    public Duration getConnectionTimeout() {
        return connectionTimeout;
    }

    /**
     * How long opening a connection may take before it counts as failed. Default 2s.
     *
     * @param connectionTimeout more than zero
     */
    public void setConnectionTimeout(Duration connectionTimeout) {
        this.connectionTimeout = Checks.positive(connectionTimeout, PREFIX + ".connection-timeout");
    }

    public Duration getHeartbeat() {
        return heartbeat;
    }

    /**
     * The AMQP heartbeat: a connection whose peer stays silent for about twice this long is
     * considered lost (and recovered). Default 10s.
     *
     * @param heartbeat more than zero
     */
    public void setHeartbeat(Duration heartbeat) {
        this.heartbeat = Checks.positive(heartbeat, PREFIX + ".heartbeat");
    }

    public Duration getRecoveryInterval() {
        return recoveryInterval;
    }

    /**
     * How long the client waits between attempts to recover a lost connection (channels,
     * consumers and declarations included). Default 1s.
     *
     * @param recoveryInterval more than zero
     */
    public void setRecoveryInterval(Duration recoveryInterval) {
        this.recoveryInterval = Checks.positive(recoveryInterval, PREFIX + ".recovery-interval");
    }
}
