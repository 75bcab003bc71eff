package dev.idempotency.store.postgres;

import dev.idempotency.testsupport.Http;

import dev.idempotency.testsupport.TestPostgres;

import dev.idempotency.server.Idempotent;
import io.micronaut.context.ApplicationContext;
import io.micronaut.context.annotation.Requires;
import io.micronaut.http.HttpResponse;
import io.micronaut.http.annotation.Body;
import io.micronaut.http.annotation.Controller;
import io.micronaut.http.annotation.Post;
import io.micronaut.scheduling.TaskExecutors;
import io.micronaut.scheduling.annotation.ExecuteOn;
import io.micronaut.runtime.server.EmbeddedServer;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.DisplayName;
import org.junit.jupiter.api.Test;

import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;

import static org.assertj.core.api.Assertions.assertThat;

/** Two application instances sharing one PostgreSQL (S10): a key runs once across both. */
class MultiInstanceTest {

    private static final String SCHEMA = TestPostgres.newSchema();
    /** Shared by both instances' controllers: executions per order id. */
    static final Map<String, AtomicInteger> EXECUTIONS = new java.util.concurrent.ConcurrentHashMap<>();
    private static EmbeddedServer first;
    private static EmbeddedServer second;

    @Controller("/multi")
    @ExecuteOn(TaskExecutors.BLOCKING)
    @Requires(property = "spec.name", value = "MultiInstanceTest")
    static class Api {
        @Post("/payments")
        @Idempotent
        HttpResponse<Map<String, Object>> pay(@Body Map<String, Object> body) throws InterruptedException {
            String id = (String) body.get("id");
            int n = EXECUTIONS.computeIfAbsent(id, k -> new AtomicInteger()).incrementAndGet();
            Thread.sleep(300); // long enough for every racer to arrive while it runs
            return HttpResponse.created(Map.of("id", id, "execution", n));
        }
    }

    @BeforeAll
    static void start() {
        Map<String, Object> props = TestPostgres.properties(TestPostgres.server(), SCHEMA);
        props.put("spec.name", "MultiInstanceTest");
        first = ApplicationContext.run(EmbeddedServer.class, props);
        second = ApplicationContext.run(EmbeddedServer.class, props);
    }

    @AfterAll
    static void stop() {
        first.close();
        second.close();
        TestPostgres.dropSchema(SCHEMA);
    }

    @Test
    @DisplayName("S10/S11: 32 concurrent requests with one key spread over two instances run the handler once;"
        + " the others get 409 with Retry-After or the byte-identical replay")
    void oneExecutionAcrossInstances() throws Exception {
        assertThat(first.getPort()).isNotEqualTo(second.getPort());
        List<Http> clients = List.of(new Http(first.getURI()), new Http(second.getURI()));
        String id = UUID.randomUUID().toString();
        String key = "\"" + UUID.randomUUID() + "\"";
        String body = "{\"id\":\"" + id + "\",\"amount\":10}";
        int n = 32;
        ExecutorService pool = Executors.newFixedThreadPool(n);
        try {
            CountDownLatch go = new CountDownLatch(1);
            List<Future<java.net.http.HttpResponse<byte[]>>> futures = new ArrayList<>();
            for (int i = 0; i < n; i++) {
                Http client = clients.get(i % 2);
                futures.add(pool.submit(() -> {
                    go.await();
                    return client.postJson("/multi/payments", key, body);
                }));
            }
            go.countDown();
            byte[] original = null;
            List<byte[]> replays = new ArrayList<>();
            int conflicts = 0;
            for (Future<java.net.http.HttpResponse<byte[]>> f : futures) {
                java.net.http.HttpResponse<byte[]> r = f.get(60, TimeUnit.SECONDS);
                if (r.statusCode() == 409) {
                    assertThat(r.headers().firstValue("Retry-After")).isPresent();
                    conflicts++;
                } else {
                    assertThat(r.statusCode()).isEqualTo(201);
                    if (r.headers().firstValue("Idempotent-Replayed").isPresent()) {
                        replays.add(r.body());
                    } else {
                        assertThat(original).as("only one original response").isNull();
                        original = r.body();
                    }
                }
            }
            assertThat(EXECUTIONS.get(id).get()).isEqualTo(1);
            assertThat(original).isNotNull();
            assertThat(conflicts + replays.size()).isEqualTo(n - 1);
            for (byte[] replay : replays) {
                assertThat(replay).isEqualTo(original);
            }
            // afterwards, either instance replays it
            for (Http client : clients) {
                java.net.http.HttpResponse<byte[]> r = client.postJson("/multi/payments", key, body);
                assertThat(r.headers().firstValue("Idempotent-Replayed")).hasValue("true");
                assertThat(r.body()).isEqualTo(original);
            }
            assertThat(EXECUTIONS.get(id).get()).isEqualTo(1);
        } finally {
            pool.shutdownNow();
        }
    }
}
