package dev.idempotency.store.redis;

import dev.idempotency.testsupport.Http;

import dev.idempotency.testsupport.TestRedis;

import io.lettuce.core.RedisClient;
import io.micronaut.context.ApplicationContext;
import io.micronaut.runtime.server.EmbeddedServer;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.DisplayName;
import org.junit.jupiter.api.Test;

import java.net.URI;
import java.net.http.HttpResponse;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * S10 across instances: two Micronaut applications (each its own context, embedded server and
 * Redis connection) share the test Redis; concurrent requests with one key, spread over both,
 * run the handler exactly once.
 */
class MultiInstanceTest {

    static final int REQUESTS = 32;

    final String prefix = TestRedis.uniquePrefix("multi");
    final List<ApplicationContext> apps = new ArrayList<>();
    final List<URI> bases = new ArrayList<>();

    @BeforeEach
    void startTwoInstances() {
        for (int i = 0; i < 2; i++) {
            ApplicationContext app = ApplicationContext.run(Map.of(
                "spec.name", TestApi.SPEC,
                "micronaut.server.port", -1,
                "redis.uri", TestRedis.uri(),
                "idempotency.store.redis.key-prefix", prefix));
            apps.add(app);
            bases.add(app.getBean(EmbeddedServer.class).start().getURI());
        }
        assertThat(bases.get(0)).isNotEqualTo(bases.get(1));
    }

    @AfterEach
    void stop() {
        apps.forEach(ApplicationContext::close);
        RedisClient client = RedisClient.create(TestRedis.uri());
        try {
            TestRedis.deleteKeys(client, prefix);
        } finally {
            client.shutdown();
        }
    }

    @Test
    @DisplayName("S10: 32 concurrent requests with one key over two instances sharing Redis: the handler runs once; "
        + "the others get 409 or the replay")
    void handlerRunsOnceAcrossInstances() throws Exception {
        String test = "multi-" + UUID.randomUUID();
        String path = "/redis-api/" + test;
        String key = "\"" + UUID.randomUUID() + "\"";
        String body = "{\"delayMillis\":1000}";
        ExecutorService pool = Executors.newFixedThreadPool(REQUESTS);
        List<HttpResponse<byte[]>> responses = new ArrayList<>();
        try {
            CountDownLatch go = new CountDownLatch(1);
            List<Future<HttpResponse<byte[]>>> futures = new ArrayList<>();
            for (int i = 0; i < REQUESTS; i++) {
                URI base = bases.get(i % 2);
                futures.add(pool.submit(() -> {
                    go.await();
                    return new Http(base).postJson(path, key, body);
                }));
            }
            go.countDown();
            for (Future<HttpResponse<byte[]>> f : futures) {
                responses.add(f.get(60, TimeUnit.SECONDS));
            }
        } finally {
            pool.shutdownNow();
        }

        assertThat(TestApi.executions(test)).isEqualTo(1);
        assertThat(responses).extracting(HttpResponse::statusCode).allMatch(s -> s == 200 || s == 409);
        List<HttpResponse<byte[]>> ok = responses.stream().filter(r -> r.statusCode() == 200).toList();
        assertThat(ok).filteredOn(r -> r.headers().firstValue("Idempotent-Replayed").isEmpty()).hasSize(1);
        byte[] original = ok.stream().filter(r -> r.headers().firstValue("Idempotent-Replayed").isEmpty())
            .findFirst().orElseThrow().body();
        assertThat(ok).allSatisfy(r -> assertThat(r.body()).isEqualTo(original));
        assertThat(responses).filteredOn(r -> r.statusCode() == 409)
            .allSatisfy(r -> assertThat(r.headers().firstValue("Retry-After")).isPresent());

        // afterwards both instances replay the one result
        for (URI base : bases) {
            HttpResponse<byte[]> replay = new Http(base).postJson(path, key, body);
            assertThat(replay.statusCode()).isEqualTo(200);
            assertThat(replay.headers().firstValue("Idempotent-Replayed")).hasValue("true");
            assertThat(replay.body()).isEqualTo(original);
        }
        assertThat(TestApi.executions(test)).isEqualTo(1);
    }
}
