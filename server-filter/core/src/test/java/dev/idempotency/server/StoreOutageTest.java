package dev.idempotency.server;

import ch.qos.logback.classic.Level;
import dev.idempotency.testsupport.Await;
import dev.idempotency.testsupport.Http;

import dev.idempotency.server.store.AcquireResult;
import dev.idempotency.server.store.IdempotencyStore;
import dev.idempotency.server.store.IdempotencyStoreException;
import dev.idempotency.server.store.memory.InMemoryIdempotencyStore;
import dev.idempotency.server.store.StoredResponse;
import dev.idempotency.testsupport.LogCapture;
import dev.idempotency.server.http.IdempotencyFilter;
import io.micrometer.core.instrument.MeterRegistry;
import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import io.micronaut.context.annotation.Factory;
import io.micronaut.context.annotation.Property;
import io.micronaut.context.annotation.Replaces;
import io.micronaut.context.annotation.Requires;
import io.micronaut.http.HttpStatus;
import io.micronaut.http.annotation.Body;
import io.micronaut.http.annotation.Controller;
import io.micronaut.http.annotation.Post;
import io.micronaut.http.exceptions.HttpStatusException;
import io.micronaut.runtime.server.EmbeddedServer;
import io.micronaut.test.extensions.junit5.annotation.MicronautTest;
import jakarta.inject.Inject;
import jakarta.inject.Singleton;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.DisplayName;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.time.Clock;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.function.Supplier;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * A store that goes away and comes back (S19): requests fail closed with 503 and Retry-After
 * while it is away, the handler never runs, nothing stored before is lost, and service resumes
 * by itself.
 */
@MicronautTest
@Property(name = "spec.name", value = "StoreOutageTest")
// every call here meets the store itself; the circuit that answers a known outage at once is StoreCircuitOutageTest's
@Property(name = "idempotency.store-circuit-failures", value = "0")
class StoreOutageTest {

    /** The in-memory store behind a switch that makes every call fail like an unreachable server. */
    @Singleton
    @Replaces(InMemoryIdempotencyStore.class)
    @Requires(property = "spec.name", value = "StoreOutageTest")
    static class SwitchableStore implements IdempotencyStore {
        private final InMemoryIdempotencyStore delegate;
        volatile boolean acquireDown;
        volatile boolean completeDown;

        SwitchableStore(Clock clock) {
            this.delegate = new InMemoryIdempotencyStore(clock, 1000);
        }

        private <T> CompletionStage<T> unlessDown(boolean down, Supplier<CompletionStage<T>> call) {
            if (down) {
                return CompletableFuture.failedFuture(new IdempotencyStoreException("connection refused (simulated outage)"));
            }
            return call.get();
        }

        @Override
        public CompletionStage<AcquireResult> acquire(String storeKey, byte[] fingerprint, Duration lease) {
            return unlessDown(acquireDown, () -> delegate.acquire(storeKey, fingerprint, lease));
        }

        @Override
        public CompletionStage<Boolean> complete(String storeKey, long fencingToken, StoredResponse response,
                                                 Duration retention) {
            return unlessDown(completeDown, () -> delegate.complete(storeKey, fencingToken, response, retention));
        }

        @Override
        public CompletionStage<Boolean> release(String storeKey, long fencingToken) {
            return unlessDown(completeDown, () -> delegate.release(storeKey, fencingToken));
        }

        @Override
        public CompletionStage<Boolean> renew(String storeKey, long fencingToken, Duration lease) {
            return unlessDown(completeDown, () -> delegate.renew(storeKey, fencingToken, lease));
        }
    }

    /** A registry of its own: the filter's meters, on the real clock the short lease runs out on. */
    @Factory
    @Requires(property = "spec.name", value = "StoreOutageTest")
    static class Meters {
        @Singleton
        MeterRegistry meterRegistry() {
            return new SimpleMeterRegistry();
        }
    }

    @Controller("/outage")
    @Requires(property = "spec.name", value = "StoreOutageTest")
    static class Api {
        final AtomicInteger closed = new AtomicInteger();
        final AtomicInteger open = new AtomicInteger();
        final AtomicInteger shortLease = new AtomicInteger();
        final AtomicInteger failing = new AtomicInteger();

        @Post("/closed")
        @Idempotent
        Map<String, Object> closed(@Body Map<String, Object> body) {
            return Map.of("execution", closed.incrementAndGet());
        }

        @Post("/short-lease")
        @Idempotent(lease = "2s")
        Map<String, Object> shortLease(@Body Map<String, Object> body) {
            return Map.of("execution", shortLease.incrementAndGet());
        }

        @Post("/failing")
        @Idempotent(lease = "3s")
        Map<String, Object> failing(@Body Map<String, Object> body) {
            failing.incrementAndGet();
            throw new HttpStatusException(HttpStatus.SERVICE_UNAVAILABLE, "the downstream is down");
        }

        @Post("/open")
        @Idempotent(failOpen = true)
        Map<String, Object> open(@Body Map<String, Object> body) {
            return Map.of("execution", open.incrementAndGet());
        }
    }

    @Inject
    EmbeddedServer server;
    @Inject
    SwitchableStore store;
    @Inject
    Api api;
    @Inject
    MeterRegistry meters;
    @RegisterExtension
    final LogCapture log = LogCapture.of(IdempotencyFilter.LOG_CATEGORY, Level.WARN);
    Http http;

    @BeforeEach
    void setUp() {
        http = new Http(server.getURI());
    }

    @AfterEach
    void storeBack() {
        store.acquireDown = false;
        store.completeDown = false;
    }

    private static final String COMPLETION_FAILED = "idempotency completion failed";
    private static final String RELEASE_FAILED = "idempotency release failed";

    private static String key() {
        return "\"" + UUID.randomUUID() + "\"";
    }

    @Test
    @DisplayName("S19: store down -> 503 problem with Retry-After, handler not run; recovers by itself")
    void failClosedAndRecover() {
        String before = key();
        HttpResponse<byte[]> stored = http.postJson("/outage/closed", before, "{\"a\":1}");
        assertThat(stored.statusCode()).isEqualTo(200);
        int executions = api.closed.get();

        store.acquireDown = true;
        String k = key();
        HttpResponse<byte[]> down = http.postJson("/outage/closed", k, "{\"a\":2}");
        assertThat(down.statusCode()).isEqualTo(503);
        assertThat(down.headers().firstValue("Content-Type")).hasValue("application/problem+json");
        assertThat(down.headers().firstValue("Retry-After")).hasValue("2");
        assertThat(new String(down.body(), StandardCharsets.UTF_8))
            .contains("\"code\":\"idempotency-store-unavailable\"")
            .doesNotContain("simulated");
        assertThat(http.postJson("/outage/closed", before, "{\"a\":1}").statusCode()).isEqualTo(503);
        assertThat(api.closed.get()).isEqualTo(executions);

        store.acquireDown = false;
        HttpResponse<byte[]> after = http.postJson("/outage/closed", k, "{\"a\":2}");
        assertThat(after.statusCode()).isEqualTo(200);
        assertThat(api.closed.get()).isEqualTo(executions + 1);
        HttpResponse<byte[]> replay = http.postJson("/outage/closed", before, "{\"a\":1}");
        assertThat(replay.headers().firstValue("Idempotent-Replayed")).hasValue("true");
        assertThat(replay.body()).isEqualTo(stored.body());
    }

    @Test
    @DisplayName("S19: a failOpen route runs without idempotency while the store is down")
    void failOpenRoute() {
        store.acquireDown = true;
        String k = key();
        int before = api.open.get();
        HttpResponse<byte[]> first = http.postJson("/outage/open", k, "{}");
        HttpResponse<byte[]> second = http.postJson("/outage/open", k, "{}");
        assertThat(first.statusCode()).isEqualTo(200);
        assertThat(second.statusCode()).isEqualTo(200);
        assertThat(second.headers().firstValue("Idempotent-Replayed")).isEmpty();
        assertThat(api.open.get()).isEqualTo(before + 2);
    }

    @Test
    @DisplayName("S19: a store lost between acquire and completion: the caller gets its result at once, retries "
        + "see 409 meanwhile, and once the store is back the completion lands and retries replay; never re-run")
    void storeLostMidRequest() throws Exception {
        store.completeDown = true;
        String k = key();
        int before = api.closed.get();
        double abandoned = meters.counter("idempotency.completions.abandoned").count();
        HttpResponse<byte[]> first = http.postJson("/outage/closed", k, "{}");
        assertThat(first.statusCode()).isEqualTo(200);
        assertThat(http.postJson("/outage/closed", k, "{}").statusCode()).isEqualTo(409);

        store.completeDown = false;
        HttpResponse<byte[]> retry = retryWhileLocked("/outage/closed", k);
        assertThat(retry.statusCode()).isEqualTo(200);
        assertThat(retry.headers().firstValue("Idempotent-Replayed")).hasValue("true");
        assertThat(retry.body()).isEqualTo(first.body());
        assertThat(api.closed.get()).isEqualTo(before + 1);
        assertThat(meters.counter("idempotency.completions.abandoned").count()).as("stored late, not abandoned")
            .isEqualTo(abandoned);
    }

    @Test
    @DisplayName("S12/S19/S22: a completion the store fails for half the lease is given up, counted"
        + " (idempotency.completions.abandoned) and logged once at ERROR with the key's hash and what follows; the key"
        + " stays locked until the lease ends, then a retry runs again")
    void completionGivenUpAfterHalfTheLease() throws Exception {
        store.completeDown = true;
        String k = key();
        int before = api.shortLease.get();
        double abandonedBefore = meters.counter("idempotency.completions.abandoned").count();
        HttpResponse<byte[]> first = http.postJson("/outage/short-lease", k, "{}");
        assertThat(first.statusCode()).as("the caller gets its result although it could not be stored")
            .isEqualTo(200);
        assertThat(http.postJson("/outage/short-lease", k, "{}").statusCode()).isEqualTo(409);

        // retries after 100, 200 and 400 ms; the next would pass half the 2 s lease: given up after about 700 ms
        Await.until("the completion given up", Duration.ofSeconds(5),
            () -> !log.lines(Level.ERROR, COMPLETION_FAILED).isEmpty());
        List<String> givenUp = log.lines(Level.ERROR, COMPLETION_FAILED);
        assertThat(givenUp).hasSize(1);
        assertThat(givenUp.get(0))
            .matches("idempotency completion failed key=[0-9a-f]{12}: the result could not be stored \\(the"
                + " response went out regardless, unless the caller's connection had closed\\); the key stays"
                + " locked until its lease expires \\(it may have already, if its renewals failed too\\), then"
                + " a retry runs the handler again")
            .doesNotContain(k.replace("\"", ""));
        assertThat(api.shortLease.get()).isEqualTo(before + 1);
        assertThat(meters.counter("idempotency.completions.abandoned").count()).isEqualTo(abandonedBefore + 1);
        assertThat(log.lines(Level.WARN, COMPLETION_FAILED)).as("each failed attempt, the first and the retries")
            .hasSizeGreaterThan(1)
            .allMatch(m -> m.matches("idempotency completion failed key=[0-9a-f]{12} \\(retried with backoff for"
                + " up to half the lease\\): .*connection refused \\(simulated outage\\)"));

        store.completeDown = false;
        HttpResponse<byte[]> retry = retryWhileLocked("/outage/short-lease", k);
        assertThat(retry.statusCode()).as("once the lease ends the key is taken over").isEqualTo(200);
        assertThat(retry.headers().firstValue("Idempotent-Replayed")).isEmpty();
        assertThat(api.shortLease.get()).as("the documented second run (contract: run-twice)").isEqualTo(before + 2);
        assertThat(log.lines(Level.ERROR, COMPLETION_FAILED)).as("given up once, not once per retry").hasSize(1);
        assertThat(meters.counter("idempotency.completions.abandoned").count()).isEqualTo(abandonedBefore + 1);
    }

    @Test
    @DisplayName("S14/S19: a 5xx whose release the store fails is answered as it was, logged once at WARN with the"
        + " key's hash (release pending); the release is retried in the background and lands once the store is"
        + " back, so a retry runs again before the 3 s lease would have ended")
    void releaseFailureIsRetriedInTheBackground() throws Exception {
        store.completeDown = true;
        String k = key();
        int before = api.failing.get();
        assertThat(http.postJson("/outage/failing", k, "{}").statusCode()).as("the handler's own answer")
            .isEqualTo(503);
        assertThat(api.failing.get()).isEqualTo(before + 1);
        List<String> failed = log.lines(Level.WARN, RELEASE_FAILED);
        assertThat(failed).as("the release is awaited before the answer goes out").hasSize(1);
        assertThat(failed.get(0))
            .matches("idempotency release failed key=[0-9a-f]{12} \\(.*connection refused \\(simulated"
                + " outage\\)\\): release pending, retried in the background until it lands or the lease ends")
            .doesNotContain(k.replace("\"", ""));

        long back = System.nanoTime();
        store.completeDown = false;
        HttpResponse<byte[]> retry = retryWhileLocked("/outage/failing", k);
        assertThat(retry.statusCode()).as("once the release landed a retry runs the handler again").isEqualTo(503);
        assertThat(api.failing.get()).isEqualTo(before + 2);
        assertThat(TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - back)).as("well within the 3 s lease")
            .isLessThan(2500);
        assertThat(log.lines(Level.ERROR, "idempotency release")).isEmpty();
    }

    /**
     * Sends {@code k} to {@code path} every 50 ms while the answer is {@code 409} (the key still
     * locked: in progress, or its completion not yet retried), for up to 10 s: longer than the
     * short leases of this test's routes and the completion retries' first few seconds.
     *
     * @return the first other answer, or the last {@code 409}
     */
    private HttpResponse<byte[]> retryWhileLocked(String path, String k) throws InterruptedException {
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(10);
        HttpResponse<byte[]> retry = http.postJson(path, k, "{}");
        while (retry.statusCode() == 409 && System.nanoTime() < deadline) {
            Thread.sleep(50);
            retry = http.postJson(path, k, "{}");
        }
        return retry;
    }
}
