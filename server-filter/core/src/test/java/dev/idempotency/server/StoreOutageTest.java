package dev.idempotency.server;

import dev.idempotency.testsupport.Http;

import dev.idempotency.server.store.AcquireResult;
import dev.idempotency.server.store.IdempotencyStore;
import dev.idempotency.server.store.IdempotencyStoreException;
import dev.idempotency.server.store.InMemoryIdempotencyStore;
import dev.idempotency.server.store.StoredResponse;
import io.micronaut.context.annotation.Property;
import io.micronaut.context.annotation.Replaces;
import io.micronaut.context.annotation.Requires;
import io.micronaut.http.annotation.Body;
import io.micronaut.http.annotation.Controller;
import io.micronaut.http.annotation.Post;
import io.micronaut.runtime.server.EmbeddedServer;
import io.micronaut.test.extensions.junit5.annotation.MicronautTest;
import jakarta.inject.Inject;
import jakarta.inject.Singleton;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.DisplayName;
import org.junit.jupiter.api.Test;

import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.time.Clock;
import java.time.Duration;
import java.util.Map;
import java.util.UUID;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;
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

    @Controller("/outage")
    @Requires(property = "spec.name", value = "StoreOutageTest")
    static class Api {
        final AtomicInteger closed = new AtomicInteger();
        final AtomicInteger open = new AtomicInteger();

        @Post("/closed")
        @Idempotent
        Map<String, Object> closed(@Body Map<String, Object> body) {
            return Map.of("execution", closed.incrementAndGet());
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
        HttpResponse<byte[]> first = http.postJson("/outage/closed", k, "{}");
        assertThat(first.statusCode()).isEqualTo(200);
        assertThat(http.postJson("/outage/closed", k, "{}").statusCode()).isEqualTo(409);

        store.completeDown = false;
        HttpResponse<byte[]> retry = null;
        long deadline = System.nanoTime() + java.util.concurrent.TimeUnit.SECONDS.toNanos(10);
        while (System.nanoTime() < deadline) {
            retry = http.postJson("/outage/closed", k, "{}");
            if (retry.statusCode() != 409) {
                break;
            }
            Thread.sleep(50);
        }
        assertThat(retry.statusCode()).isEqualTo(200);
        assertThat(retry.headers().firstValue("Idempotent-Replayed")).hasValue("true");
        assertThat(retry.body()).isEqualTo(first.body());
        assertThat(api.closed.get()).isEqualTo(before + 1);
    }
}
