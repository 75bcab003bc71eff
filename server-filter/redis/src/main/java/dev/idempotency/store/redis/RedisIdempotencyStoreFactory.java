package dev.idempotency.store.redis;

import dev.idempotency.server.store.InMemoryIdempotencyStore;
import io.lettuce.core.AbstractRedisClient;
import io.lettuce.core.RedisClient;
import io.lettuce.core.cluster.RedisClusterClient;
import io.micronaut.context.BeanLocator;
import io.micronaut.context.annotation.Bean;
import io.micronaut.context.annotation.Factory;
import io.micronaut.context.annotation.Replaces;
import io.micronaut.context.annotation.Requires;
import io.micronaut.context.exceptions.ConfigurationException;
import io.micronaut.inject.qualifiers.Qualifiers;
import jakarta.inject.Singleton;

import java.time.Clock;
import java.util.Optional;

/**
 * Makes the {@link RedisIdempotencyStore} bean, which replaces the in-memory store, unless
 * {@code idempotency.store.redis.enabled=false}.
 *
 * <p>Which Redis: the Lettuce client micronaut-redis configures. Without
 * {@code idempotency.store.redis.server} that is the default client, a {@link RedisClusterClient}
 * when {@code redis.uris} is set, else a {@link RedisClient} from {@code redis.uri}; with it, the
 * client named so ({@code redis.servers.<name>.*}), cluster or standalone. Looking the client up
 * does no I/O; the store connects on first use.
 */
@Factory
@Requires(property = RedisIdempotencyStoreConfigurationProperties.PREFIX + ".enabled", notEquals = "false")
final class RedisIdempotencyStoreFactory {

    @Singleton
    @Replaces(InMemoryIdempotencyStore.class)
    @Bean(preDestroy = "close")
    RedisIdempotencyStore redisIdempotencyStore(BeanLocator beans, Clock clock,
                                                RedisIdempotencyStoreConfiguration configuration) {
        return new RedisIdempotencyStore(client(beans, configuration.getServer()), clock, configuration);
    }

    static AbstractRedisClient client(BeanLocator beans, Optional<String> server) {
        if (server.isPresent()) {
            String name = server.get();
            return beans.findBean(RedisClusterClient.class, Qualifiers.byName(name))
                .map(AbstractRedisClient.class::cast)
                .or(() -> beans.findBean(RedisClient.class, Qualifiers.byName(name)))
                .orElseThrow(() -> new ConfigurationException(RedisIdempotencyStoreConfigurationProperties.PREFIX
                    + ".server names the Redis server '" + name + "', but no redis.servers." + name + " is configured"));
        }
        return beans.findBean(RedisClusterClient.class)
            .map(AbstractRedisClient.class::cast)
            .or(() -> beans.findBean(RedisClient.class))
            .orElseThrow(() -> new ConfigurationException("The Redis idempotency store needs a Redis client: set"
                + " redis.uri (or redis.uris for a cluster), or " + RedisIdempotencyStoreConfigurationProperties.PREFIX
                + ".enabled=false"));
    }
}
