package dev.idempotency.store.redis;

import dev.idempotency.server.store.memory.InMemoryIdempotencyStore;
import io.lettuce.core.AbstractRedisClient;
import io.lettuce.core.RedisClient;
import io.lettuce.core.RedisURI;
import io.lettuce.core.cluster.RedisClusterClient;
import io.micronaut.configuration.lettuce.AbstractRedisConfiguration;
import io.micronaut.configuration.lettuce.NamedRedisServersConfiguration;
import io.micronaut.context.BeanLocator;
import io.micronaut.context.annotation.Bean;
import io.micronaut.context.annotation.Factory;
import io.micronaut.context.annotation.Replaces;
import io.micronaut.context.annotation.Requires;
import io.micronaut.context.exceptions.ConfigurationException;
import io.micronaut.inject.qualifiers.Qualifiers;
import jakarta.inject.Singleton;

import java.time.Clock;
import java.util.List;
import java.util.Optional;

/**
 * Makes the {@link RedisIdempotencyStore} bean, which replaces the in-memory store, when the
 * Redis store is selected: {@code idempotency.store.type=redis}, or no type and not
 * {@code idempotency.store.redis.enabled=false} (see {@link dev.idempotency.server.store.StoreType}).
 *
 * <p>Which Redis: the one micronaut-redis is configured for. Without
 * {@code idempotency.store.redis.server} that is the default client, a {@link RedisClusterClient}
 * when {@code redis.uris} is set, else a {@link RedisClient} for {@code redis.uri}; with it, the
 * server named so ({@code redis.servers.<name>.*}), cluster or standalone. The store connects to
 * the same URIs with a connection of its own that shares that client's resources and options.
 * Looking the client and its settings up does no I/O; the store connects on first use.
 */
@Factory
@Requires(condition = RedisStoreSelected.class)
final class RedisIdempotencyStoreFactory {

    @Singleton
    @Replaces(InMemoryIdempotencyStore.class)
    @Bean(preDestroy = "close")
    RedisIdempotencyStore redisIdempotencyStore(BeanLocator beans, Clock clock,
                                                RedisIdempotencyStoreConfiguration configuration) {
        Optional<String> server = configuration.getServer();
        AbstractRedisClient client = client(beans, server);
        return new RedisIdempotencyStore(client, uris(beans, server, client), clock, configuration);
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
                + " redis.uri (or redis.uris for a cluster), or choose another store with idempotency.store.type"));
    }

    /** The URIs micronaut-redis made {@code client} for: its {@code uri} (standalone) or {@code uris} (cluster). */
    static List<RedisURI> uris(BeanLocator beans, Optional<String> server, AbstractRedisClient client) {
        String where = server.map(name -> "redis.servers." + name).orElse("redis");
        AbstractRedisConfiguration settings = (server.isPresent()
            ? beans.findBean(NamedRedisServersConfiguration.class, Qualifiers.byName(server.get()))
                .map(AbstractRedisConfiguration.class::cast)
            : beans.findBean(AbstractRedisConfiguration.class))
            .orElseThrow(() -> new ConfigurationException("The Redis idempotency store connects where micronaut-redis"
                + " does, but no " + where + ".* settings were found: set " + where + ".uri (or " + where + ".uris)"));
        if (client instanceof RedisClusterClient) {
            List<RedisURI> uris = settings.getUris();
            if (uris == null || uris.isEmpty()) {
                throw new ConfigurationException("The Redis idempotency store: " + where + ".uris is empty");
            }
            return uris;
        }
        return List.of(settings.getUri().orElse(settings));
    }
}
