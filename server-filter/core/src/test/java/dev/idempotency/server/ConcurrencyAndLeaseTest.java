package dev.idempotency.server;

import dev.idempotency.testsupport.Await;
import dev.idempotency.testsupport.MutableClock;

import dev.idempotency.testsupport.Http;

import io.micrometer.core.instrument.MeterRegistry;
import io.micronaut.context.annotation.Property;
import io.micronaut.context.annotation.Requires;
import io.micronaut.http.HttpResponse;
import io.micronaut.http.annotation.Body;
import io.micronaut.http.annotation.Controller;
import io.micronaut.http.annotation.Post;
import io.micronaut.runtime.server.EmbeddedServer;
import io.micronaut.scheduling.TaskExecutors;
import io.micronaut.scheduling.annotation.ExecuteOn;
import io.micronaut.test.extensions.junit5.annotation.MicronautTest;
import jakarta.inject.Inject;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.DisplayName;
import org.junit.jupiter.api.Test;

import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * Many callers racing for one key, and a handler that outlives its lease (S10, S12), on the
 * in-memory store with a fake clock.
 */
@MicronautTest
@Property(name = "spec.name", value = "ConcurrencyAndLeaseTest")
// the default purge interval (a minute): a purge between moving the fake clock past the lease
// and the takeover request would remove the expired record, and the retry would find no lease to
// take over (InMemoryScheduledPurgeTest purges on a short schedule instead)
// A long lease: the renewer ticks on real time (every lease/3), so with 10 minutes no renewal can
// land between the test moving the fake clock past the lease and the takeover request.
@Property(name = "idempotency.lease", value = "10m")
class ConcurrencyAndLeaseTest {

    @Controller("/race")
    @ExecuteOn(TaskExecutors.BLOCKING)
    @Requires(property = "spec.name", value = "ConcurrencyAndLeaseTest")
    static class RaceApi {
        final Map<String, AtomicInteger> executions = new ConcurrentHashMap<>();
        final Map<Integer, CountDownLatch> gates = new ConcurrentHashMap<>();
        final Map<Integer, CountDownLatch> entered = new ConcurrentHashMap<>();

        @Post("/orders")
        @Idempotent
        HttpResponse<Map<String, Object>> order(@Body Map<String, Object> body) throws InterruptedException {
            String id = String.valueOf(body.get("id"));
            int n = executions.computeIfAbsent(id, k -> new AtomicInteger()).incrementAndGet();
            entered.computeIfAbsent(n, k -> new CountDownLatch(1)).countDown();
            CountDownLatch gate = gates.get(n);
            if (gate != null && !gate.await(30, TimeUnit.SECONDS)) {
                throw new IllegalStateException("gate never opened");
            }
            return HttpResponse.created(Map.of("order", id, "execution", n));
        }
    }

    @Inject
    EmbeddedServer server;
    @Inject
    RaceApi api;
    @Inject
    MutableClock clock;
    @Inject
    MeterRegistry meters;
    Http http;

    @BeforeEach
    void setUp() {
        http = new Http(server.getURI());
        api.gates.clear();
        api.entered.clear();
    }

    @Test
    @DisplayName("S10: 64 threads sending the same key and body run the handler once; "
        + "every other caller gets 409 or the replay")
    void sixtyFourRacersOneExecution() throws Exception {
        String id = UUID.randomUUID().toString();
        String key = "\"" + UUID.randomUUID() + "\"";
        String body = "{\"id\":\"" + id + "\",\"amount\":5}";
        CountDownLatch gate = new CountDownLatch(1);
        api.gates.put(1, gate);
        int n = 64;
        ExecutorService pool = Executors.newFixedThreadPool(n);
        try {
            CountDownLatch start = new CountDownLatch(1);
            List<Future<java.net.http.HttpResponse<byte[]>>> futures = new ArrayList<>();
            for (int i = 0; i < n; i++) {
                futures.add(pool.submit(() -> {
                    start.await();
                    return http.postJson("/race/orders", key, body);
                }));
            }
            start.countDown();
            // Hold the one execution until every other racer has been answered (409 while in flight),
            // then let it finish; later racers (if any are still in flight) see the replay.
            assertThat(api.entered.computeIfAbsent(1, k -> new CountDownLatch(1)).await(20, TimeUnit.SECONDS)).isTrue();
            Await.until("every racer but the held one answered", Duration.ofSeconds(20),
                () -> futures.stream().filter(Future::isDone).count() >= n - 1);
            int conflicts = 0;
            List<Future<java.net.http.HttpResponse<byte[]>>> rest = new ArrayList<>();
            for (Future<java.net.http.HttpResponse<byte[]>> f : futures) {
                if (f.isDone()) {
                    java.net.http.HttpResponse<byte[]> r = f.get();
                    assertThat(r.statusCode()).isEqualTo(409);
                    assertThat(r.headers().firstValue("Retry-After")).isPresent();
                    conflicts++;
                } else {
                    rest.add(f);
                }
            }
            gate.countDown();
            byte[] original = null;
            for (Future<java.net.http.HttpResponse<byte[]>> f : rest) {
                java.net.http.HttpResponse<byte[]> r = f.get(30, TimeUnit.SECONDS);
                assertThat(r.statusCode()).isIn(201, 409);
                if (r.statusCode() == 201) {
                    original = r.body();
                }
            }
            assertThat(conflicts).isEqualTo(n - 1);
            assertThat(original).isNotNull();
            assertThat(api.executions.get(id).get()).isEqualTo(1);

            // a second wave after completion: everybody gets the byte-identical replay
            List<Future<java.net.http.HttpResponse<byte[]>>> wave = new ArrayList<>();
            for (int i = 0; i < n; i++) {
                wave.add(pool.submit(() -> http.postJson("/race/orders", key, body)));
            }
            for (Future<java.net.http.HttpResponse<byte[]>> f : wave) {
                java.net.http.HttpResponse<byte[]> r = f.get(30, TimeUnit.SECONDS);
                assertThat(r.statusCode()).isEqualTo(201);
                assertThat(r.headers().firstValue("Idempotent-Replayed")).hasValue("true");
                assertThat(r.body()).isEqualTo(original);
            }
            assertThat(api.executions.get(id).get()).isEqualTo(1);
        } finally {
            pool.shutdownNow();
        }
    }

    private double count(String meter) {
        io.micrometer.core.instrument.Counter c = meters.find(meter).counter();
        return c == null ? 0 : c.count();
    }

    @Test
    @DisplayName("S12: after the lease expires (fake clock) a retry takes over; the old holder's completion "
        + "is fenced and the newer result stands")
    void leaseExpiryTakeoverAndFencing() throws Exception {
        String id = UUID.randomUUID().toString();
        String key = "\"" + UUID.randomUUID() + "\"";
        String body = "{\"id\":\"" + id + "\"}";
        double fencedBefore = count("idempotency.completions.fenced");
        double takenBefore = count("idempotency.leases.taken-over");
        double abandonedBefore = count("idempotency.completions.abandoned");
        CountDownLatch gate = new CountDownLatch(1);
        api.gates.put(1, gate);

        CompletableFuture<java.net.http.HttpResponse<byte[]>> stuck =
            CompletableFuture.supplyAsync(() -> http.postJson("/race/orders", key, body));
        assertThat(api.entered.computeIfAbsent(1, k -> new CountDownLatch(1)).await(10, TimeUnit.SECONDS)).isTrue();
        assertThat(http.postJson("/race/orders", key, body).statusCode()).isEqualTo(409);

        clock.advance(Duration.ofMinutes(10).plusSeconds(1)); // past the 10 min lease
        java.net.http.HttpResponse<byte[]> takeover = http.postJson("/race/orders", key, body);
        assertThat(takeover.statusCode()).isEqualTo(201);
        assertThat(new String(takeover.body(), StandardCharsets.UTF_8)).contains("\"execution\":2");
        assertThat(count("idempotency.leases.taken-over")).isEqualTo(takenBefore + 1);

        gate.countDown();
        java.net.http.HttpResponse<byte[]> old = stuck.get(10, TimeUnit.SECONDS);
        assertThat(old.statusCode()).isEqualTo(201);
        assertThat(new String(old.body(), StandardCharsets.UTF_8)).contains("\"execution\":1");
        assertThat(count("idempotency.completions.fenced")).isEqualTo(fencedBefore + 1);
        assertThat(count("idempotency.completions.abandoned")).as("fenced is an answer, not a failure")
            .isEqualTo(abandonedBefore);

        java.net.http.HttpResponse<byte[]> replay = http.postJson("/race/orders", key, body);
        assertThat(replay.headers().firstValue("Idempotent-Replayed")).hasValue("true");
        assertThat(replay.body()).isEqualTo(takeover.body());
        assertThat(api.executions.get(id).get()).isEqualTo(2);
    }
}
