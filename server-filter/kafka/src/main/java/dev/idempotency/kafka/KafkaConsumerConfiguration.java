package dev.idempotency.kafka;

import dev.idempotency.messaging.ConsumerSettings;
import dev.idempotency.server.Checks;
import io.micronaut.context.annotation.EachProperty;
import io.micronaut.context.annotation.Parameter;
import io.micronaut.core.annotation.Nullable;
import io.micronaut.core.convert.format.MapFormat;

import java.time.Duration;
import java.util.List;
import java.util.Map;

/**
 * {@code idempotency.kafka.consumers.<name>.*}: one idempotent consumer (CONTRACT M4, M8). Its
 * handler is the application's bean named {@code <name>} ({@code @Named("<name>")}) implementing
 * {@code MessageHandler}, or {@code TransactionalMessageHandler} when {@code transactional}. It
 * consumes {@code topics} in the consumer group {@code group-id}; a record given up on goes to
 * {@code <topic>.dead} (or {@code dead-letter-topic}) with the reason in a header, which the
 * module creates when it is missing and {@code create-dead-letter-topics} is on.
 */
@EachProperty(KafkaConfigurationProperties.PREFIX + ".consumers")
public class KafkaConsumerConfiguration {

    private final String name;
    private List<String> topics;
    private String groupId;
    @Nullable
    private String deadLetterTopic;
    private boolean createDeadLetterTopics = true;
    private int concurrency = 1;
    private int maxPollRecords = 200;
    private Duration revokeTimeout = Duration.ofSeconds(10);
    private boolean transactional;
    private int maxAttempts = ConsumerSettings.DEFAULT_MAX_ATTEMPTS;
    private Duration retryDelay = ConsumerSettings.DEFAULT_RETRY_DELAY;
    private Duration retryDelayMax = ConsumerSettings.DEFAULT_RETRY_DELAY_MAX;
    private Duration inProgressDelay = ConsumerSettings.DEFAULT_IN_PROGRESS_DELAY;
    private Duration lease = ConsumerSettings.DEFAULT_LEASE;
    private Duration retention = ConsumerSettings.DEFAULT_RETENTION;
    private Map<String, String> properties = Map.of();

    public KafkaConsumerConfiguration(@Parameter String name) {
        this.name = name;
        this.topics = List.of(name);
        this.groupId = name;
    }

    private String setting(String s) {
        return KafkaConfigurationProperties.PREFIX + ".consumers." + name + "." + s;
    }

    /** @return the consumer's name, which is also its handler bean's name and its store scope */
    public String getName() {
        return name;
    }

    public List<String> getTopics() {
        return topics;
    }

    /**
     * The topics it consumes. Default: one, named like the consumer.
     *
     * @param topics at least one topic name
     */
    public void setTopics(List<String> topics) {
        if (topics == null || topics.isEmpty() || topics.stream().anyMatch(t -> t == null || t.isBlank())) {
            throw new IllegalArgumentException(setting("topics") + " must name at least one topic");
        }
        this.topics = List.copyOf(topics);
    }

    public String getGroupId() {
        return groupId;
    }

    /**
     * The consumer group: instances with the same group share the topics' partitions. Default:
     * the consumer's name.
     *
     * @param groupId not blank
     */
    public void setGroupId(String groupId) {
        if (groupId == null || groupId.isBlank()) {
            throw new IllegalArgumentException(setting("group-id") + " must not be blank");
        }
        this.groupId = groupId;
    }

    /** @return where a record of {@code topic} goes when it is given up on */
    public String deadLetterTopicOf(String topic) {
        return deadLetterTopic != null ? deadLetterTopic : topic + ".dead";
    }

    @Nullable
    public String getDeadLetterTopic() {
        return deadLetterTopic;
    }

    /**
     * The topic for the records given up on, for every topic of the consumer. Default:
     * {@code <topic>.dead} for each topic.
     *
     * @param deadLetterTopic a topic name
     */
    public void setDeadLetterTopic(@Nullable String deadLetterTopic) {
        if (deadLetterTopic != null && deadLetterTopic.isBlank()) {
            throw new IllegalArgumentException(setting("dead-letter-topic") + " must not be blank");
        }
        this.deadLetterTopic = deadLetterTopic;
    }

    public boolean isCreateDeadLetterTopics() {
        return createDeadLetterTopics;
    }

    /**
     * Whether the module creates the dead-letter topics that are missing, at startup (one
     * partition, the cluster's default replication). Default true.
     *
     * @param create whether to create them
     */
    public void setCreateDeadLetterTopics(boolean create) {
        this.createDeadLetterTopics = create;
    }

    public int getConcurrency() {
        return concurrency;
    }

    /**
     * How many Kafka consumers this instance runs in the group, each on a thread of its own (the
     * partitions are shared among them and among the other instances). Default 1.
     *
     * @param concurrency at least 1
     */
    public void setConcurrency(int concurrency) {
        this.concurrency = Checks.atLeast(concurrency, 1, setting("concurrency"));
    }

    public int getMaxPollRecords() {
        return maxPollRecords;
    }

    /**
     * Kafka's {@code max.poll.records}, and how many records one partition may hold waiting
     * before it is paused. Default 200.
     *
     * @param maxPollRecords at least 1
     */
    public void setMaxPollRecords(int maxPollRecords) {
        this.maxPollRecords = Checks.atLeast(maxPollRecords, 1, setting("max-poll-records"));
    }

    public Duration getRevokeTimeout() {
        return revokeTimeout;
    }

    /**
     * How long a rebalance waits for the records in flight of a partition this instance loses to
     * finish, so their offsets are committed before the partition moves. A record still running
     * after that is not committed: its next owner finds its id in progress, and then processed.
     * Default 10s.
     *
     * @param revokeTimeout more than zero
     */
    public void setRevokeTimeout(Duration revokeTimeout) {
        this.revokeTimeout = Checks.positive(revokeTimeout, setting("revoke-timeout"));
    }

    public boolean isTransactional() {
        return transactional;
    }

    /**
     * Whether the handler runs in the idempotency store's database transaction (the inbox,
     * PostgreSQL only). Default false.
     *
     * @param transactional whether the handler is a {@code TransactionalMessageHandler}
     */
    public void setTransactional(boolean transactional) {
        this.transactional = transactional;
    }

    public int getMaxAttempts() {
        return maxAttempts;
    }

    /**
     * How many times the handler may fail for one record before it is dead-lettered. Default
     * {@value dev.idempotency.messaging.ConsumerSettings#DEFAULT_MAX_ATTEMPTS}.
     *
     * @param maxAttempts at least 1
     */
    public void setMaxAttempts(int maxAttempts) {
        this.maxAttempts = Checks.atLeast(maxAttempts, 1, setting("max-attempts"));
    }

    public Duration getRetryDelayMax() {
        return retryDelayMax;
    }

    /**
     * The longest wait before a failed message comes back: the wait is {@code retry-delay} after
     * the first failure and doubles after each further one, up to this; at or below
     * {@code retry-delay}, every retry waits {@code retry-delay}. Default 30s.
     *
     * @param retryDelayMax more than zero
     */
    public void setRetryDelayMax(Duration retryDelayMax) {
        this.retryDelayMax = Checks.positive(retryDelayMax, setting("retry-delay-max"));
    }

    public Duration getRetryDelay() {
        return retryDelay;
    }

    /**
     * How long a record whose handler failed once waits (its partition paused) before it runs
     * again; each further failure doubles the wait, up to {@code retry-delay-max}. Default 5s.
     *
     * @param retryDelay more than zero
     */
    public void setRetryDelay(Duration retryDelay) {
        this.retryDelay = Checks.positive(retryDelay, setting("retry-delay"));
    }

    public Duration getInProgressDelay() {
        return inProgressDelay;
    }

    /**
     * How long a record waits (its partition paused) when its id is being processed elsewhere, or
     * the store did not answer. Default 2s.
     *
     * @param inProgressDelay more than zero
     */
    public void setInProgressDelay(Duration inProgressDelay) {
        this.inProgressDelay = Checks.positive(inProgressDelay, setting("in-progress-delay"));
    }

    public Duration getLease() {
        return lease;
    }

    /**
     * How long a record holds its id while the handler runs (renewed while it runs, so only a
     * crashed consumer's hold runs out). Default 30s.
     *
     * @param lease more than zero
     */
    public void setLease(Duration lease) {
        this.lease = Checks.positive(lease, setting("lease"));
    }

    public Duration getRetention() {
        return retention;
    }

    /**
     * How long a processed id is remembered: the de-duplication window, which must outlast the
     * longest way back (a record replayed by hand from the dead-letter topic included). Default 7d.
     *
     * @param retention more than zero
     */
    public void setRetention(Duration retention) {
        this.retention = Checks.positive(retention, setting("retention"));
    }

    public Map<String, String> getProperties() {
        return properties;
    }

    /**
     * Kafka consumer properties for this consumer's clients only, over the module-wide
     * {@code idempotency.kafka.properties}: for example {@code session.timeout.ms}, how long the
     * group waits for a consumer that stopped without leaving (a {@code kill -9}, a lost host)
     * before its partitions move to the others (Kafka's own default is 45s), with
     * {@code heartbeat.interval.ms} at most a third of it. The properties the module fixes cannot be
     * set. Default: none.
     *
     * @param properties Kafka's consumer property names and values
     */
    public void setProperties(@MapFormat(transformation = MapFormat.MapTransformation.FLAT) Map<String, String> properties) {
        this.properties = KafkaClients.notFixed(properties, setting("properties"));
    }

    /** @return the store-side settings of this consumer */
    public ConsumerSettings settings() {
        return new ConsumerSettings(name, lease, retention, maxAttempts, retryDelay, inProgressDelay, transactional,
            retryDelayMax);
    }
}
