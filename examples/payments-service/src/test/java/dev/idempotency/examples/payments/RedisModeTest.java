package dev.idempotency.examples.payments;

import dev.idempotency.server.store.IdempotencyStore;
import dev.idempotency.store.redis.RedisIdempotencyStore;
import dev.idempotency.testsupport.TestRedis;
import io.micronaut.json.JsonMapper;
import io.micronaut.runtime.server.EmbeddedServer;
import io.micronaut.test.extensions.junit5.annotation.MicronautTest;
import io.micronaut.test.support.TestPropertyProvider;
import jakarta.inject.Inject;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.DisplayName;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestInstance;

import java.net.http.HttpResponse;
import java.util.Map;
import java.util.UUID;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * The example in its {@code redis} environment, as the README runs it: records live in a real
 * Redis (the configured one, else one started for the test), and the service behaves the same.
 */
@MicronautTest(environments = "redis")
@TestInstance(TestInstance.Lifecycle.PER_CLASS)
class RedisModeTest implements TestPropertyProvider {

    @Inject
    EmbeddedServer server;
    @Inject
    IdempotencyStore store;
    @Inject
    JsonMapper json;

    private final String prefix = "payments-example-" + UUID.randomUUID() + ":";

    @Override
    public Map<String, String> getProperties() {
        return Map.of("redis.uri", TestRedis.uri(), "idempotency.store.redis.key-prefix", prefix);
    }

    /** The records this test made, off the shared Redis again. */
    @AfterAll
    void removeRecords() {
        TestRedis.deleteKeys(prefix);
    }

    @Test
    @DisplayName("S17: in the redis environment the Redis store serves the filter; a retry replays, one side effect")
    void redisEnvironment() {
        assertThat(store).isInstanceOf(RedisIdempotencyStore.class);
        Api api = new Api(server.getURI(), json);
        String key = "\"" + UUID.randomUUID() + "\"";
        long before = api.stats().sideEffects();
        HttpResponse<byte[]> first = api.post("/payments", key, "{\"amount\":1000,\"currency\":\"EUR\"}");
        HttpResponse<byte[]> retry = api.post("/payments", key, "{\"currency\":\"EUR\",\"amount\":1000.0}");
        assertThat(first.statusCode()).isEqualTo(201);
        assertThat(retry.statusCode()).isEqualTo(201);
        assertThat(retry.headers().firstValue("Idempotent-Replayed")).hasValue("true");
        assertThat(retry.body()).isEqualTo(first.body());
        assertThat(api.stats().sideEffects()).isEqualTo(before + 1);
    }
}
