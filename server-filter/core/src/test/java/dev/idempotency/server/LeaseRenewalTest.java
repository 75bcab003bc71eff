package dev.idempotency.server;

import dev.idempotency.testsupport.Http;

import io.micronaut.context.annotation.Property;
import io.micronaut.context.annotation.Requires;
import io.micronaut.http.annotation.Body;
import io.micronaut.http.annotation.Controller;
import io.micronaut.http.annotation.Post;
import io.micronaut.runtime.server.EmbeddedServer;
import io.micronaut.scheduling.TaskExecutors;
import io.micronaut.scheduling.annotation.ExecuteOn;
import io.micronaut.test.extensions.junit5.annotation.MicronautTest;
import jakarta.inject.Inject;
import org.junit.jupiter.api.DisplayName;
import org.junit.jupiter.api.Test;

import java.util.Map;
import java.util.UUID;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * A handler that runs far longer than its lease keeps the key (S12): the filter renews the
 * lease while it runs, on the real clock, so a duplicate still gets 409 instead of taking over.
 * The test waits for the lease to lapse several times over; it asserts outcomes, not timings.
 */
@MicronautTest
@Property(name = "spec.name", value = "LeaseRenewalTest")
class LeaseRenewalTest {

    @Controller("/renew")
    @ExecuteOn(TaskExecutors.BLOCKING)
    @Requires(property = "spec.name", value = "LeaseRenewalTest")
    static class SlowApi {
        final AtomicInteger executions = new AtomicInteger();
        volatile CountDownLatch gate = new CountDownLatch(1);
        final CountDownLatch entered = new CountDownLatch(1);

        @Post("/job")
        @Idempotent(lease = "1s")
        Map<String, Object> job(@Body Map<String, Object> body) throws InterruptedException {
            int n = executions.incrementAndGet();
            entered.countDown();
            if (!gate.await(30, TimeUnit.SECONDS)) {
                throw new IllegalStateException("gate never opened");
            }
            return Map.of("execution", n);
        }
    }

    @Inject
    EmbeddedServer server;
    @Inject
    SlowApi api;

    @Test
    @DisplayName("S12: a handler that outlives its lease renews it; a duplicate gets 409, not a takeover")
    void longHandlerKeepsItsLease() throws Exception {
        Http http = new Http(server.getURI());
        String key = "\"" + UUID.randomUUID() + "\"";
        CompletableFuture<java.net.http.HttpResponse<byte[]>> original =
            CompletableFuture.supplyAsync(() -> http.postJson("/renew/job", key, "{}"));
        assertThat(api.entered.await(10, TimeUnit.SECONDS)).isTrue();
        Thread.sleep(2_500); // 2.5 leases: without renewal the key would be free by now

        java.net.http.HttpResponse<byte[]> duplicate = http.postJson("/renew/job", key, "{}");
        assertThat(duplicate.statusCode()).isEqualTo(409);
        assertThat(api.executions.get()).isEqualTo(1);

        api.gate.countDown();
        java.net.http.HttpResponse<byte[]> done = original.get(10, TimeUnit.SECONDS);
        assertThat(done.statusCode()).isEqualTo(200);
        java.net.http.HttpResponse<byte[]> replay = http.postJson("/renew/job", key, "{}");
        assertThat(replay.headers().firstValue("Idempotent-Replayed")).hasValue("true");
        assertThat(replay.body()).isEqualTo(done.body());
        assertThat(api.executions.get()).isEqualTo(1);
    }
}
