package dev.idempotency.store.redis;

import dev.idempotency.server.Checks;
import io.micronaut.context.annotation.ConfigurationProperties;
import io.micronaut.core.annotation.Nullable;

import java.time.Duration;
import java.util.Objects;
import java.util.Optional;

/**
 * {@code idempotency.store.redis.*}: the Redis store's settings. Every setter checks its value
 * and fails the application's startup with a message naming the setting and the bad value.
 */
@ConfigurationProperties(RedisIdempotencyStoreConfigurationProperties.PREFIX)
public class RedisIdempotencyStoreConfigurationProperties implements RedisIdempotencyStoreConfiguration {

    /** The prefix of every setting. */
    public static final String PREFIX = "idempotency.store.redis";
    public static final boolean DEFAULT_ENABLED = true;
    public static final String DEFAULT_KEY_PREFIX = "idempotency:";
    public static final Duration DEFAULT_COMMAND_TIMEOUT = Duration.ofSeconds(2);
    public static final Duration DEFAULT_LATE_COMPLETION_WINDOW = Duration.ofHours(24);
    public static final Duration DEFAULT_EXPIRY_GRACE = Duration.ofMinutes(1);
    public static final boolean DEFAULT_EVENT_LOOP_CONNECTIONS = true;
    public static final int DEFAULT_WAIT_REPLICAS = 0;
    public static final Duration DEFAULT_WAIT_TIMEOUT = Duration.ofMillis(200);

    private boolean enabled = DEFAULT_ENABLED;
    private String keyPrefix = DEFAULT_KEY_PREFIX;
    private Duration commandTimeout = DEFAULT_COMMAND_TIMEOUT;
    private String server;
    private Duration lateCompletionWindow = DEFAULT_LATE_COMPLETION_WINDOW;
    private Duration expiryGrace = DEFAULT_EXPIRY_GRACE;
    private boolean eventLoopConnections = DEFAULT_EVENT_LOOP_CONNECTIONS;
    private EvictionCheck evictionPolicyCheck = EvictionCheck.WARN;
    private Duration reconnectDelayMax = Duration.ofMillis(500);
    private int waitReplicas = DEFAULT_WAIT_REPLICAS;
    private Duration waitTimeout = DEFAULT_WAIT_TIMEOUT;

    @Override
    public boolean isEnabled() {
        return enabled;
    }

    /**
     * Whether the Redis store replaces the in-memory store when {@code idempotency.store.type}
     * is not set (which, when set, decides alone). Default {@value #DEFAULT_ENABLED}: putting the
     * module on the classpath is enough.
     *
     * @param enabled {@code false} to keep the in-memory store
     */
    public void setEnabled(boolean enabled) {
        this.enabled = enabled;
    }

    @Override
    public String getKeyPrefix() {
        return keyPrefix;
    }

    /**
     * The prefix of every Redis key the store writes, e.g. to share one Redis between
     * applications. Default {@value #DEFAULT_KEY_PREFIX}. It may not contain '{' or '}': the
     * store puts the record's key in braces (a Redis Cluster hash tag).
     *
     * @param keyPrefix the prefix, possibly empty
     */
    public void setKeyPrefix(String keyPrefix) {
        Objects.requireNonNull(keyPrefix, PREFIX + ".key-prefix");
        if (keyPrefix.indexOf('{') >= 0 || keyPrefix.indexOf('}') >= 0) {
            throw new IllegalArgumentException(PREFIX + ".key-prefix may not contain '{' or '}' (the store adds the"
                + " Redis Cluster hash tag itself), was " + keyPrefix);
        }
        this.keyPrefix = keyPrefix;
    }

    @Override
    public Duration getCommandTimeout() {
        return commandTimeout;
    }

    /**
     * The bound on every Redis command the store sends, and on opening its connections. The store
     * checks it itself, every tenth of the timeout (at least every 50 ms), rather than with a timer
     * per command, so a command fails at most that much late. A command that takes longer fails,
     * and the request is answered 503 {@code idempotency-store-unavailable}. Default 2s.
     *
     * @param commandTimeout a positive duration
     */
    public void setCommandTimeout(Duration commandTimeout) {
        this.commandTimeout = Checks.positive(commandTimeout, PREFIX + ".command-timeout");
    }

    @Override
    public Optional<String> getServer() {
        return Optional.ofNullable(server);
    }

    /**
     * The micronaut-redis server to use: the name of a {@code redis.servers.<name>} entry.
     * Default: none, meaning the default connection, which micronaut-redis makes a Redis
     * Cluster client when {@code redis.uris} is set and a standalone client from
     * {@code redis.uri} otherwise.
     *
     * @param server a server name, or {@code null} for the default connection
     */
    public void setServer(@Nullable String server) {
        this.server = server == null || server.isBlank() ? null : server.trim();
    }

    @Override
    public Duration getLateCompletionWindow() {
        return lateCompletionWindow;
    }

    /**
     * How long an in-progress record is kept in Redis after its lease ended. Its holder may still
     * complete or release it during that time unless another request took it over (a late
     * completion, see {@code IdempotencyStore}); after it, Redis deletes the record and such a
     * completion is refused like a fenced one. Default 24h. Abandoned in-progress records are
     * small (no response), so a generous window costs little memory.
     *
     * @param lateCompletionWindow a positive duration
     */
    public void setLateCompletionWindow(Duration lateCompletionWindow) {
        this.lateCompletionWindow = Checks.positive(lateCompletionWindow, PREFIX + ".late-completion-window");
    }

    @Override
    public Duration getExpiryGrace() {
        return expiryGrace;
    }

    /**
     * How long a completed record stays in Redis after its retention ended (the retention itself
     * is decided by the application's clock, so this only absorbs clock differences between
     * instances before Redis deletes the record), and how long a released key's tombstone keeps
     * its last fencing token (zero: a release deletes the record). Default 1m.
     *
     * @param expiryGrace zero or a positive duration
     */
    public void setExpiryGrace(Duration expiryGrace) {
        this.expiryGrace = Checks.notNegative(expiryGrace, PREFIX + ".expiry-grace");
    }

    @Override
    public boolean isEventLoopConnections() {
        return eventLoopConnections;
    }

    /**
     * Whether a store call made on an event loop (the HTTP server's, where the filter runs) goes
     * out on a Redis connection of that loop: written by the calling thread, answered on it, with
     * no hand-over between threads. The store then opens one connection per event loop that calls
     * it (at most the server's event-loop count) plus one shared by calls from other threads.
     * Standalone Redis over TCP only, on event loops of the transport Lettuce uses (a server on NIO
     * with {@code netty-transport-native-epoll} on the class path, which Lettuce then uses, shares
     * one connection, and the store logs so once); a Redis Cluster always uses one connection. Set {@code false}
     * for a single connection, e.g. where Redis limits connections per client. Default
     * {@value #DEFAULT_EVENT_LOOP_CONNECTIONS}.
     *
     * @param eventLoopConnections whether each event loop gets its own connection
     */
    public void setEventLoopConnections(boolean eventLoopConnections) {
        this.eventLoopConnections = eventLoopConnections;
    }

    @Override
    public Duration getReconnectDelayMax() {
        return reconnectDelayMax;
    }

    /**
     * The longest wait between two attempts to reconnect a lost connection of the store; the
     * waits double from 1 ms up to this. A Redis that comes back is used again within about this
     * long, where Lettuce's own back-off would wait up to 30 s. Default 500ms.
     *
     * @param reconnectDelayMax a positive duration
     */
    public void setReconnectDelayMax(Duration reconnectDelayMax) {
        this.reconnectDelayMax = Checks.positive(reconnectDelayMax, PREFIX + ".reconnect-delay-max");
    }

    @Override
    public EvictionCheck getEvictionPolicyCheck() {
        return evictionPolicyCheck;
    }

    /**
     * What the store does at startup when Redis's {@code maxmemory-policy} lets Redis delete its
     * keys under memory pressure: every {@code allkeys-*} policy, and every {@code volatile-*}
     * one, since every key of the store has a TTL. An evicted record is a key the next retry runs
     * again; only {@code noeviction} is safe (a full Redis then refuses writes, which the filter
     * answers 503). {@code warn} logs it, {@code fail} stops the startup, {@code off} does not
     * ask (the check needs {@code CONFIG GET}; where that is not allowed the store logs that it
     * could not check). Default {@code warn}.
     *
     * @param evictionPolicyCheck {@code warn}, {@code fail} or {@code off}
     */
    public void setEvictionPolicyCheck(EvictionCheck evictionPolicyCheck) {
        this.evictionPolicyCheck = Objects.requireNonNull(evictionPolicyCheck, PREFIX + ".eviction-policy-check");
    }

    @Override
    public int getWaitReplicas() {
        return waitReplicas;
    }

    /**
     * How many replicas must have a write before the store relies on it (Redis {@code WAIT},
     * pipelined after the write on the same connection). Redis replicates asynchronously: a
     * primary can acknowledge an acquire and fail before any replica has it, and after the
     * failover the retry finds no record and runs the handler again. With N &gt; 0:
     * <ul>
     *   <li>an acquire that fewer than N replicas confirm within {@code wait-timeout} fails closed:
     *       the record is released, the request is answered 503 {@code idempotency-store-unavailable}
     *       with {@code Retry-After}, and the handler does not run;</li>
     *   <li>a completion, renewal or step that fewer than N confirm is waited for twice more; then the
     *       result stands (the caller gets it), and the store logs a WARN naming the record that a
     *       failover could lose, and counts it ({@link RedisIdempotencyStore#underReplicatedWrites()}).</li>
     * </ul>
     * Every write then costs a replica's round trip more, and a connection's later commands queue
     * behind it. Default {@value #DEFAULT_WAIT_REPLICAS}: no wait, today's behaviour.
     *
     * @param waitReplicas zero or more replicas
     */
    public void setWaitReplicas(int waitReplicas) {
        if (waitReplicas < 0) {
            throw new IllegalArgumentException(PREFIX + ".wait-replicas must be 0 (no wait) or more, was " + waitReplicas);
        }
        this.waitReplicas = waitReplicas;
    }

    @Override
    public Duration getWaitTimeout() {
        return waitTimeout;
    }

    /**
     * How long one {@code WAIT} waits for {@code wait-replicas} replicas. Must be shorter than
     * {@code command-timeout}, which bounds the write and its wait together. Default 200ms.
     *
     * @param waitTimeout a positive duration
     */
    public void setWaitTimeout(Duration waitTimeout) {
        this.waitTimeout = Checks.positive(waitTimeout, PREFIX + ".wait-timeout");
    }
}
