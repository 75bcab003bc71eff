package dev.idempotency.store.postgres;

import dev.idempotency.testsupport.Http;

import dev.idempotency.testsupport.TestPostgres;

import dev.idempotency.server.Idempotent;
import dev.idempotency.testsupport.MutableClock;
import io.micronaut.context.ApplicationContext;
import io.micronaut.context.annotation.Factory;
import io.micronaut.context.annotation.Requires;
import io.micronaut.http.HttpResponse;
import io.micronaut.http.annotation.Body;
import io.micronaut.http.annotation.Controller;
import io.micronaut.http.annotation.Post;
import io.micronaut.scheduling.TaskExecutors;
import io.micronaut.scheduling.annotation.ExecuteOn;
import io.micronaut.runtime.server.EmbeddedServer;
import jakarta.inject.Singleton;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.DisplayName;
import org.junit.jupiter.api.Test;

import java.time.Clock;
import java.time.Duration;
import java.util.Map;
import java.util.UUID;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;

import static org.assertj.core.api.Assertions.assertThat;

/** Lease takeover and fenced completion through the filter, on PostgreSQL with a moved clock (S12). */
class FencingThroughFilterTest {

    private static final String SCHEMA = TestPostgres.newSchema();
    private static EmbeddedServer server;

    @Factory
    @Requires(property = "spec.name", value = "FencingThroughFilterTest")
    static class Beans {
        @Singleton
        Clock clock() {
            return new MutableClock(java.time.Instant.now());
        }
    }

    @Controller("/fence")
    @ExecuteOn(TaskExecutors.BLOCKING)
    @Requires(property = "spec.name", value = "FencingThroughFilterTest")
    static class Api {
        final AtomicInteger executions = new AtomicInteger();
        volatile CountDownLatch gate = new CountDownLatch(0);
        final CountDownLatch entered = new CountDownLatch(1);

        @Post("/jobs")
        @Idempotent
        HttpResponse<Map<String, Object>> run(@Body Map<String, Object> body) throws InterruptedException {
            int n = executions.incrementAndGet();
            if (n == 1) {
                entered.countDown();
                gate.await(30, TimeUnit.SECONDS);
            }
            return HttpResponse.created(Map.of("execution", n));
        }
    }

    @BeforeAll
    static void start() {
        Map<String, Object> props = TestPostgres.properties(TestPostgres.server(), SCHEMA);
        props.put("spec.name", "FencingThroughFilterTest");
        // renewals tick on real time every lease/3: with 10 minutes none lands during the test
        props.put("idempotency.lease", "10m");
        server = ApplicationContext.run(EmbeddedServer.class, props);
    }

    @AfterAll
    static void stop() {
        server.close();
        TestPostgres.dropSchema(SCHEMA);
    }

    @Test
    @DisplayName("S12: after the lease expires a retry takes over; the stuck original's completion is fenced"
        + " and the newer result is what replays")
    void takeoverFencesTheOldHolder() throws Exception {
        Api api = server.getApplicationContext().getBean(Api.class);
        MutableClock clock = (MutableClock) server.getApplicationContext().getBean(Clock.class);
        Http http = new Http(server.getURI());
        String key = "\"" + UUID.randomUUID() + "\"";
        api.gate = new CountDownLatch(1);
        CompletableFuture<java.net.http.HttpResponse<byte[]>> stuck =
            CompletableFuture.supplyAsync(() -> http.postJson("/fence/jobs", key, "{}"));
        assertThat(api.entered.await(10, TimeUnit.SECONDS)).isTrue();
        assertThat(http.postJson("/fence/jobs", key, "{}").statusCode()).isEqualTo(409);

        clock.advance(Duration.ofMinutes(10).plusSeconds(1));
        java.net.http.HttpResponse<byte[]> takeover = http.postJson("/fence/jobs", key, "{}");
        assertThat(takeover.statusCode()).isEqualTo(201);
        assertThat(Http.body(takeover)).contains("\"execution\":2");

        api.gate.countDown();
        java.net.http.HttpResponse<byte[]> old = stuck.get(10, TimeUnit.SECONDS);
        assertThat(old.statusCode()).isEqualTo(201);
        assertThat(Http.body(old)).contains("\"execution\":1");

        java.net.http.HttpResponse<byte[]> replay = http.postJson("/fence/jobs", key, "{}");
        assertThat(replay.headers().firstValue("Idempotent-Replayed")).hasValue("true");
        assertThat(replay.body()).isEqualTo(takeover.body());
        assertThat(api.executions.get()).isEqualTo(2);
    }
}
