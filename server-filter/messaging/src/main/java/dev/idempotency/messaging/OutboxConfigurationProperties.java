package dev.idempotency.messaging;

import dev.idempotency.server.Checks;
import io.micronaut.context.annotation.ConfigurationProperties;

import java.time.Duration;

/**
 * {@code idempotency.outbox.*}: the outbox and its relay (CONTRACT M3). Every setter checks its
 * value and fails the application's startup with a message naming the setting.
 */
@ConfigurationProperties(OutboxConfigurationProperties.PREFIX)
public class OutboxConfigurationProperties {

    /** The settings' prefix. */
    public static final String PREFIX = "idempotency.outbox";
    public static final boolean DEFAULT_ENABLED = true;
    public static final Duration DEFAULT_POLL_INTERVAL = Duration.ofMillis(200);
    public static final int DEFAULT_BATCH_SIZE = 100;
    public static final int DEFAULT_MAX_ATTEMPTS = 20;
    public static final Duration DEFAULT_RETRY_BACKOFF = Duration.ofMillis(500);
    public static final Duration DEFAULT_RETRY_BACKOFF_MAX = Duration.ofSeconds(30);
    public static final Duration DEFAULT_SEND_TIMEOUT = Duration.ofSeconds(10);
    public static final Duration DEFAULT_RELAY_LEASE = Duration.ofSeconds(15);
    public static final int DEFAULT_MEMORY_CAPACITY = 100_000;
    public static final int DEFAULT_PARTITIONS = 64;

    private boolean enabled = DEFAULT_ENABLED;
    private boolean relayEnabled = true;
    private Duration pollInterval = DEFAULT_POLL_INTERVAL;
    private int batchSize = DEFAULT_BATCH_SIZE;
    private int maxAttempts = DEFAULT_MAX_ATTEMPTS;
    private Duration retryBackoff = DEFAULT_RETRY_BACKOFF;
    private Duration retryBackoffMax = DEFAULT_RETRY_BACKOFF_MAX;
    private Duration sendTimeout = DEFAULT_SEND_TIMEOUT;
    private Duration relayLease = DEFAULT_RELAY_LEASE;
    private int memoryCapacity = DEFAULT_MEMORY_CAPACITY;
    private int partitions = DEFAULT_PARTITIONS;
    private boolean notify = true;
    private String listenUrl;

    public boolean isEnabled() {
        return enabled;
    }

    /**
     * Whether the outbox exists: {@code false} removes the outbox, its relay and its in-memory
     * store. Default {@value #DEFAULT_ENABLED}.
     *
     * @param enabled whether the outbox exists
     */
    public void setEnabled(boolean enabled) {
        this.enabled = enabled;
    }

    public boolean isRelayEnabled() {
        return relayEnabled;
    }

    /**
     * Whether this instance relays messages to the broker. Where several instances share a
     * PostgreSQL outbox, the relaying ones share its partitions out (see {@code partitions}); set
     * {@code false} on instances that should never relay. Default true.
     *
     * @param relayEnabled whether this instance may relay
     */
    public void setRelayEnabled(boolean relayEnabled) {
        this.relayEnabled = relayEnabled;
    }

    public Duration getPollInterval() {
        return pollInterval;
    }

    /**
     * How often the relay looks for messages when it was not woken by a publish on this
     * instance: the longest a message committed elsewhere waits before it is sent. Default
     * 200ms.
     *
     * @param pollInterval more than zero
     */
    public void setPollInterval(Duration pollInterval) {
        this.pollInterval = Checks.positive(pollInterval, PREFIX + ".poll-interval");
    }

    public int getBatchSize() {
        return batchSize;
    }

    /**
     * How many messages the relay sends at a time, all confirmed before the next batch. Default
     * {@value #DEFAULT_BATCH_SIZE}.
     *
     * @param batchSize at least 1
     */
    public void setBatchSize(int batchSize) {
        this.batchSize = Checks.atLeast(batchSize, 1, PREFIX + ".batch-size");
    }

    public int getMaxAttempts() {
        return maxAttempts;
    }

    /**
     * How many times the relay tries to send one message before it parks it, with the last
     * failure as the reason, so it no longer holds back the messages after it (an operator
     * decides). A broker that is down is not counted: only a message the broker refuses. Default
     * {@value #DEFAULT_MAX_ATTEMPTS}.
     *
     * @param maxAttempts at least 1
     */
    public void setMaxAttempts(int maxAttempts) {
        this.maxAttempts = Checks.atLeast(maxAttempts, 1, PREFIX + ".max-attempts");
    }

    public Duration getRetryBackoff() {
        return retryBackoff;
    }

    /**
     * The wait after a first failed send; it doubles with each failure up to
     * {@code retry-backoff-max}. Default 500ms.
     *
     * @param retryBackoff more than zero
     */
    public void setRetryBackoff(Duration retryBackoff) {
        this.retryBackoff = Checks.positive(retryBackoff, PREFIX + ".retry-backoff");
    }

    public Duration getRetryBackoffMax() {
        return retryBackoffMax;
    }

    /**
     * The longest wait between two tries. Default 30s.
     *
     * @param retryBackoffMax more than zero
     */
    public void setRetryBackoffMax(Duration retryBackoffMax) {
        this.retryBackoffMax = Checks.positive(retryBackoffMax, PREFIX + ".retry-backoff-max");
    }

    public Duration getSendTimeout() {
        return sendTimeout;
    }

    /**
     * How long the relay waits for the broker to confirm a batch before it counts the batch as
     * failed (and tries again: the broker may have it already, consumers de-duplicate). Default
     * 10s.
     *
     * @param sendTimeout more than zero
     */
    public void setSendTimeout(Duration sendTimeout) {
        this.sendTimeout = Checks.positive(sendTimeout, PREFIX + ".send-timeout");
    }

    public Duration getRelayLease() {
        return relayLease;
    }

    /**
     * How long an instance holds its partitions of a shared outbox (and counts as a live relay)
     * without renewing them: after it crashed, the others take its partitions over this much
     * later. Default 15s.
     *
     * @param relayLease more than zero
     */
    public void setRelayLease(Duration relayLease) {
        this.relayLease = Checks.positive(relayLease, PREFIX + ".relay-lease");
    }

    public int getMemoryCapacity() {
        return memoryCapacity;
    }

    /**
     * How many messages the in-memory outbox (used without the PostgreSQL store) holds while the
     * broker is away; past that, publishing fails. Default {@value #DEFAULT_MEMORY_CAPACITY}.
     *
     * @param memoryCapacity at least 1
     */
    public void setMemoryCapacity(int memoryCapacity) {
        this.memoryCapacity = Checks.atLeast(memoryCapacity, 1, PREFIX + ".memory-capacity");
    }

    public int getPartitions() {
        return partitions;
    }

    /**
     * How many partitions the outbox's ordering keys hash into (CONTRACT M9). Each partition is
     * relayed by one instance at a time, and the instances share them out, so this is the most
     * instances that can relay in parallel. Every instance sharing an outbox must use the same
     * value: an instance that joins with another one fails its startup. To change it, stop every
     * instance, then start them with the new value (a key's waiting messages keep their order
     * across the change). Default {@value #DEFAULT_PARTITIONS}.
     *
     * @param partitions 1 to 4096
     */
    public void setPartitions(int partitions) {
        this.partitions = Checks.atLeast(partitions, 1, PREFIX + ".partitions");
        if (partitions > 4096) {
            throw new IllegalArgumentException(PREFIX + ".partitions must be at most 4096, was " + partitions);
        }
    }

    public boolean isNotify() {
        return notify;
    }

    /**
     * Whether publishing wakes the relays of every instance at once (CONTRACT M10; PostgreSQL:
     * the publishing transaction NOTIFYs, the relays LISTEN). The poll stays as the fallback, so a
     * lost wake-up costs at most {@code poll-interval}. Behind PgBouncer in transaction mode a
     * LISTEN does not work (its session is not kept): set {@code listen-url} to reach PostgreSQL
     * directly, or turn this off and rely on the poll. Default true.
     *
     * @param notify whether to notify and listen
     */
    public void setNotify(boolean notify) {
        this.notify = notify;
    }

    public String getListenUrl() {
        return listenUrl;
    }

    /**
     * The JDBC URL the relay's LISTEN connection uses, with the datasource's credentials, when it
     * must not go where the datasource goes (PgBouncer in transaction mode). Default: none, the
     * datasource's own URL.
     *
     * @param listenUrl a {@code jdbc:postgresql://} URL
     */
    public void setListenUrl(String listenUrl) {
        if (listenUrl != null && !listenUrl.startsWith("jdbc:postgresql:")) {
            throw new IllegalArgumentException(PREFIX + ".listen-url must be a jdbc:postgresql: URL, was " + listenUrl);
        }
        this.listenUrl = listenUrl;
    }
}
