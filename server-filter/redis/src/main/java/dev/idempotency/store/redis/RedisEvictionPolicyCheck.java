package dev.idempotency.store.redis;

import dev.idempotency.store.redis.RedisIdempotencyStoreConfiguration.EvictionCheck;
import io.micronaut.context.annotation.Requires;
import io.micronaut.context.event.StartupEvent;
import io.micronaut.context.exceptions.ConfigurationException;
import io.micronaut.runtime.event.annotation.EventListener;
import jakarta.inject.Singleton;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;

/**
 * Reads Redis's {@code maxmemory-policy} once at startup and says so when Redis may delete the
 * store's keys under memory pressure: an evicted record is a key whose next retry runs the
 * operation again. Every key of the store has a TTL, so {@code volatile-*} policies are as unsafe
 * as {@code allkeys-*}; only {@code noeviction} is safe. {@code eviction-policy-check} decides
 * between a WARN and a failed startup. A Redis that cannot be reached at startup, or refuses
 * {@code CONFIG GET}, is logged and does not stop the application.
 */
@Singleton
@Requires(beans = RedisIdempotencyStore.class)
final class RedisEvictionPolicyCheck {

    private static final Logger LOG = LoggerFactory.getLogger(RedisIdempotencyStore.class);

    private final RedisIdempotencyStore store;
    private final RedisIdempotencyStoreConfiguration config;

    RedisEvictionPolicyCheck(RedisIdempotencyStore store, RedisIdempotencyStoreConfiguration config) {
        this.store = store;
        this.config = config;
    }

    @EventListener
    void check(StartupEvent event) {
        if (config.getEvictionPolicyCheck() == EvictionCheck.OFF) {
            return;
        }
        String policy;
        try {
            policy = store.maxmemoryPolicy().get(config.getCommandTimeout().toMillis() + 1000, TimeUnit.MILLISECONDS);
        } catch (ExecutionException | TimeoutException e) {
            LOG.warn("idempotency: could not read Redis's maxmemory-policy ({}); make sure it is noeviction, or Redis"
                + " may delete idempotency records under memory pressure and their retries run again",
                e instanceof ExecutionException ? String.valueOf(e.getCause()) : "no answer in time");
            return;
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            return;
        }
        String problem = problem(policy);
        if (problem == null) {
            return;
        }
        if (config.getEvictionPolicyCheck() == EvictionCheck.FAIL) {
            throw new ConfigurationException(problem + " (" + RedisIdempotencyStoreConfigurationProperties.PREFIX
                + ".eviction-policy-check=fail)");
        }
        LOG.warn(problem);
    }

    /** @return what is wrong with {@code policy}, or {@code null} when it cannot evict the store's keys */
    static String problem(String policy) {
        String p = policy.trim().toLowerCase(java.util.Locale.ROOT);
        if (p.equals("noeviction")) {
            return null;
        }
        String which = p.startsWith("volatile-") ? "keys with a TTL, as every idempotency record has"
            : p.startsWith("allkeys-") ? "any key" : "keys";
        return "idempotency: Redis's maxmemory-policy is " + policy + ": when Redis is full it deletes " + which
            + ", so an in-progress or completed idempotency record can vanish and its retry run the operation again."
            + " Set maxmemory-policy noeviction (a full Redis then refuses new keys, answered 503, and loses"
            + " nothing), or give the store a Redis of its own that has it";
    }
}
