package dev.idempotency.store.redis;

import dev.idempotency.testsupport.RedisServerProcess;
import io.lettuce.core.RedisClient;
import io.lettuce.core.RedisURI;

import java.time.Clock;
import java.util.List;
import java.util.concurrent.TimeUnit;

/**
 * A redis-server of a test class's own and an application's Lettuce client of it, for tests
 * that make stores by hand with the default key prefix (their records go with the server).
 */
final class OwnRedis implements AutoCloseable {

    final RedisServerProcess server;
    final RedisClient client;

    private OwnRedis(RedisServerProcess server) {
        this.server = server;
        this.client = RedisClient.create(server.uri());
    }

    static OwnRedis start() {
        return new OwnRedis(RedisServerProcess.start());
    }

    /** @return a store on this server through the application's client */
    RedisIdempotencyStore store(Clock clock, RedisIdempotencyStoreConfigurationProperties config) {
        return new RedisIdempotencyStore(client, List.of(RedisURI.create(server.uri())), clock, config);
    }

    @Override
    public void close() {
        client.shutdown(0, 2, TimeUnit.SECONDS);
        server.close();
    }
}
