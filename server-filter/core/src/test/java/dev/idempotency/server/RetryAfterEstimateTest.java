package dev.idempotency.server;

import dev.idempotency.testsupport.Http;
import io.micronaut.context.annotation.Property;
import io.micronaut.context.annotation.Requires;
import io.micronaut.http.annotation.Body;
import io.micronaut.http.annotation.Controller;
import io.micronaut.http.annotation.Post;
import io.micronaut.scheduling.TaskExecutors;
import io.micronaut.scheduling.annotation.ExecuteOn;
import io.micronaut.runtime.server.EmbeddedServer;
import io.micronaut.test.extensions.junit5.annotation.MicronautTest;
import jakarta.inject.Inject;
import org.junit.jupiter.api.DisplayName;
import org.junit.jupiter.api.Test;

import java.net.http.HttpResponse;
import java.util.Map;
import java.util.UUID;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * S11 over HTTP: the 409's {@code Retry-After} comes from how long the route usually takes once
 * the filter has seen it run, so a duplicate of a fast operation is not told to wait the 5 s cap.
 */
@MicronautTest
@Property(name = "spec.name", value = "RetryAfterEstimateTest")
class RetryAfterEstimateTest {

    @Inject
    EmbeddedServer server;
    @Inject
    Api api;

    @Controller("/estimate")
    @ExecuteOn(TaskExecutors.BLOCKING)
    @Requires(property = "spec.name", value = "RetryAfterEstimateTest")
    static class Api {
        volatile CountDownLatch gate = new CountDownLatch(0);
        volatile CountDownLatch entered = new CountDownLatch(1);

        @Post
        @Idempotent
        Map<String, Object> run(@Body Map<String, Object> body) throws InterruptedException {
            entered.countDown();
            if (!gate.await(30, TimeUnit.SECONDS)) {
                throw new IllegalStateException("gate never opened");
            }
            return Map.of("ok", true);
        }
    }

    private String retryAfterOfDuplicate(Http http) throws Exception {
        String k = "\"" + UUID.randomUUID() + "\"";
        api.gate = new CountDownLatch(1);
        api.entered = new CountDownLatch(1);
        CompletableFuture<HttpResponse<byte[]>> original =
            CompletableFuture.supplyAsync(() -> http.postJson("/estimate", k, "{}"));
        assertThat(api.entered.await(10, TimeUnit.SECONDS)).isTrue();
        HttpResponse<byte[]> dup = http.postJson("/estimate", k, "{}");
        assertThat(dup.statusCode()).isEqualTo(409);
        api.gate.countDown();
        assertThat(original.get(10, TimeUnit.SECONDS).statusCode()).isEqualTo(200);
        return dup.headers().firstValue("Retry-After").orElseThrow();
    }

    @Test
    @DisplayName("S11: unknown route: the cap (5 s); after it has run quickly a few times: 1 s")
    void learnsTheRoute() throws Exception {
        Http http = new Http(server.getURI());
        // the first duplicate ever: the filter knows nothing of the route, the remaining lease is capped
        assertThat(retryAfterOfDuplicate(http)).isEqualTo("5");
        // a few quick runs (the gate is open): the route usually takes milliseconds now; the slow first
        // run fades as newer ones weigh more
        api.gate = new CountDownLatch(0);
        for (int i = 0; i < 30; i++) {
            assertThat(http.postJson("/estimate", "\"" + UUID.randomUUID() + "\"", "{}").statusCode()).isEqualTo(200);
        }
        assertThat(retryAfterOfDuplicate(http)).isEqualTo("1");
    }
}
