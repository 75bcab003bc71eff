package dev.idempotency.kafka;

import dev.idempotency.server.Checks;
import io.micronaut.context.annotation.ConfigurationProperties;
import io.micronaut.core.convert.format.MapFormat;

import java.time.Duration;
import java.util.Map;

/**
 * {@code idempotency.kafka.*}: the cluster the Kafka module talks to (CONTRACT M8). Consumers are
 * configured under {@code idempotency.kafka.consumers.<name>.*} ({@link KafkaConsumerConfiguration}).
 * Every setter checks its value and fails the application's startup with a message naming the
 * setting; settings that contradict the outbox's are refused at startup too.
 */
@ConfigurationProperties(KafkaConfigurationProperties.PREFIX)
public class KafkaConfigurationProperties {

    /** The settings' prefix. */
    public static final String PREFIX = "idempotency.kafka";
    public static final String DEFAULT_BOOTSTRAP_SERVERS = "127.0.0.1:9092";
    public static final Duration DEFAULT_DELIVERY_TIMEOUT = Duration.ofSeconds(6);
    public static final Duration DEFAULT_REQUEST_TIMEOUT = Duration.ofSeconds(3);
    public static final Duration DEFAULT_LINGER = Duration.ofMillis(1);

    private boolean enabled = true;
    private String bootstrapServers = DEFAULT_BOOTSTRAP_SERVERS;
    private String clientId = "idempotency";
    private Duration deliveryTimeout = DEFAULT_DELIVERY_TIMEOUT;
    private Duration requestTimeout = DEFAULT_REQUEST_TIMEOUT;
    private Duration linger = DEFAULT_LINGER;
    private Map<String, String> properties = Map.of();

    public boolean isEnabled() {
        return enabled;
    }

    /**
     * Whether the module talks to Kafka at all: {@code false} removes the outbox's sender and the
     * consumers. Default true.
     *
     * @param enabled whether the module is active
     */
    public void setEnabled(boolean enabled) {
        this.enabled = enabled;
    }

    public String getBootstrapServers() {
        return bootstrapServers;
    }

    /**
     * The cluster: {@code host:port[,host:port...]}. Default {@value #DEFAULT_BOOTSTRAP_SERVERS}.
     *
     * @param bootstrapServers one address or more, comma-separated
     */
    public void setBootstrapServers(String bootstrapServers) {
        if (bootstrapServers == null || bootstrapServers.isBlank()) {
            throw new IllegalArgumentException(PREFIX + ".bootstrap-servers must name at least one host:port");
        }
        for (String a : bootstrapServers.split(",")) {
            String s = a.trim();
            int colon = s.lastIndexOf(':');
            if (colon <= 0 || colon == s.length() - 1 || !s.substring(colon + 1).chars().allMatch(Character::isDigit)) {
                throw new IllegalArgumentException(PREFIX + ".bootstrap-servers: '" + s + "' is not host:port");
            }
        }
        this.bootstrapServers = bootstrapServers;
    }

    public String getClientId() {
        return clientId;
    }

    /**
     * The prefix of the clients' {@code client.id} (the producer's, each consumer's), as the
     * brokers' logs and quotas see it. Default {@code idempotency}.
     *
     * @param clientId not blank
     */
    public void setClientId(String clientId) {
        if (clientId == null || clientId.isBlank()) {
            throw new IllegalArgumentException(PREFIX + ".client-id must not be blank");
        }
        this.clientId = clientId;
    }

    public Duration getDeliveryTimeout() {
        return deliveryTimeout;
    }

    /**
     * The producer's {@code delivery.timeout.ms}: how long a message may take from the relay's
     * send to the cluster's acknowledgement, retries included, before it counts as not sent.
     * With {@code request-timeout} (the longest the producer may block first) it must be shorter than
     * {@code idempotency.outbox.send-timeout}, so that the relay never
     * gives up on a batch the producer is still sending. Default 6s.
     *
     * @param deliveryTimeout more than {@code request-timeout} plus {@code linger}
     */
    public void setDeliveryTimeout(Duration deliveryTimeout) {
        this.deliveryTimeout = Checks.positive(deliveryTimeout, PREFIX + ".delivery-timeout");
    }

    public Duration getRequestTimeout() {
        return requestTimeout;
    }

    /**
     * Every client's {@code request.timeout.ms}, and the producer's {@code max.block.ms}: how long
     * one request to a broker may take. Default 3s.
     *
     * @param requestTimeout more than zero
     */
    public void setRequestTimeout(Duration requestTimeout) {
        this.requestTimeout = Checks.positive(requestTimeout, PREFIX + ".request-timeout");
    }

    public Duration getLinger() {
        return linger;
    }

    /**
     * The producer's {@code linger.ms}: how long it waits to fill a batch. Default 1ms.
     *
     * @param linger zero or more
     */
    public void setLinger(Duration linger) {
        if (linger == null || linger.isNegative()) {
            throw new IllegalArgumentException(PREFIX + ".linger must be zero or more, was " + linger);
        }
        this.linger = linger;
    }

    public Map<String, String> getProperties() {
        return properties;
    }

    /**
     * Kafka client properties given to every client the module makes (producer, consumers, admin),
     * e.g. {@code security.protocol} or {@code sasl.jaas.config}; a consumer's own
     * {@code idempotency.kafka.consumers.<name>.properties} go to its clients only. The settings the module's guarantees
     * rest on ({@code enable.idempotence}, {@code acks}, {@code enable.auto.commit},
     * {@code isolation.level}, the (de)serializers) cannot be overridden: naming one is a startup
     * error. Default: none.
     *
     * @param properties Kafka's property names and values
     */
    public void setProperties(@MapFormat(transformation = MapFormat.MapTransformation.FLAT) Map<String, String> properties) {
        this.properties = KafkaClients.notFixed(properties, PREFIX + ".properties");
    }
}
