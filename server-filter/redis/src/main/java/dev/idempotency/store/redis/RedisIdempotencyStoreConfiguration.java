package dev.idempotency.store.redis;

import java.time.Duration;
import java.util.Optional;

/**
 * {@code idempotency.store.redis.*}: settings of the Redis store. See
 * {@link RedisIdempotencyStoreConfigurationProperties} for each setting's meaning and default.
 */
public interface RedisIdempotencyStoreConfiguration {

    /** @return whether the Redis store replaces the in-memory one */
    boolean isEnabled();

    /** @return the prefix of every Redis key the store writes (never contains '{' or '}') */
    String getKeyPrefix();

    /** @return the bound on every Redis command, and on establishing the connection */
    Duration getCommandTimeout();

    /**
     * @return the name of a micronaut-redis server ({@code redis.servers.<name>}); empty for the
     *     default connection ({@code redis.uri} or {@code redis.uris})
     */
    Optional<String> getServer();

    /**
     * @return how long an in-progress record is kept after its lease ended, so a holder that was
     *     late but not taken over can still complete
     */
    Duration getLateCompletionWindow();

    /** @return how long a completed record stays in Redis after its retention ended */
    Duration getExpiryGrace();

    /**
     * @return whether a call made on an event loop goes out on a connection of that loop (one per
     *     event loop that calls the store), instead of the one shared connection
     */
    default boolean isEventLoopConnections() {
        return true;
    }

    /** @return the longest wait between two attempts to reconnect a lost connection of the store */
    default Duration getReconnectDelayMax() {
        return Duration.ofMillis(500);
    }

    /** What the store does at startup when Redis may evict its keys ({@code maxmemory-policy}). */
    enum EvictionCheck {
        /** Log a WARN naming the policy and what to do. */
        WARN,
        /** Stop the application's startup. */
        FAIL,
        /** Do not check (e.g. where {@code CONFIG} is not allowed and the policy is known to be safe). */
        OFF
    }

    /** @return what the store does at startup when Redis's {@code maxmemory-policy} can evict its keys */
    default EvictionCheck getEvictionPolicyCheck() {
        return EvictionCheck.WARN;
    }

    /** @return how many replicas must confirm a write ({@code WAIT}); 0 waits for none */
    default int getWaitReplicas() {
        return 0;
    }

    /** @return how long one {@code WAIT} for {@link #getWaitReplicas()} replicas may take */
    default Duration getWaitTimeout() {
        return Duration.ofMillis(200);
    }
}
