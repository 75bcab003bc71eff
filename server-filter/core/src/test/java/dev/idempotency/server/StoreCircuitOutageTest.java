package dev.idempotency.server;

import dev.idempotency.server.store.AcquireResult;
import dev.idempotency.server.store.IdempotencyStoreException;
import dev.idempotency.server.store.memory.InMemoryIdempotencyStore;
import dev.idempotency.testsupport.Http;
import dev.idempotency.server.internal.runtime.StoreCircuit;
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
import org.junit.jupiter.api.DisplayName;
import org.junit.jupiter.api.Test;

import java.net.http.HttpResponse;
import java.time.Clock;
import java.time.Duration;
import java.util.Map;
import java.util.UUID;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.atomic.AtomicInteger;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * S19 with the store circuit: a store that fails every call (here after a delay, like a command
 * timeout) is asked only until it counts as down; from then on new keys get their 503 without
 * waiting, with a {@code Retry-After} of the probe interval, and one probe per interval finds the
 * store back. Nothing is timed: the test counts what reached the store.
 */
@MicronautTest
@Property(name = "spec.name", value = "StoreCircuitOutageTest")
@Property(name = "idempotency.store-circuit-failures", value = "3")
@Property(name = "idempotency.store-circuit-probe-interval", value = "300ms")
class StoreCircuitOutageTest {

    /** The in-memory store behind a switch; a call while down fails after 200 ms, like a timeout. */
    @Singleton
    @Replaces(InMemoryIdempotencyStore.class)
    @Requires(property = "spec.name", value = "StoreCircuitOutageTest")
    static class SlowFailingStore extends InMemoryBackedStore {
        final AtomicInteger acquires = new AtomicInteger();
        volatile boolean down;

        SlowFailingStore(Clock clock) {
            super(new InMemoryIdempotencyStore(clock, 1000));
        }

        @Override
        public CompletionStage<AcquireResult> acquire(String storeKey, byte[] fingerprint, Duration lease) {
            acquires.incrementAndGet();
            if (down) {
                return CompletableFuture.supplyAsync(() -> {
                    throw new IdempotencyStoreException("command timed out (simulated outage)");
                }, CompletableFuture.delayedExecutor(200, java.util.concurrent.TimeUnit.MILLISECONDS));
            }
            return delegate.acquire(storeKey, fingerprint, lease);
        }

    }

    @Controller("/circuit")
    @Requires(property = "spec.name", value = "StoreCircuitOutageTest")
    static class Api {
        final AtomicInteger runs = new AtomicInteger();

        @Post
        @Idempotent
        Map<String, Object> run(@Body Map<String, Object> body) {
            return Map.of("run", runs.incrementAndGet());
        }
    }

    @Inject
    EmbeddedServer server;
    @Inject
    SlowFailingStore store;
    @Inject
    Api api;
    @Inject
    StoreCircuit circuit;

    private static String key() {
        return "\"" + UUID.randomUUID() + "\"";
    }

    @Test
    @DisplayName("S19: after 3 failed calls new keys get 503 without asking the store, Retry-After = probe interval;"
        + " a probe finds the store back and service resumes")
    void knownOutageIsAnsweredAtOnce() throws Exception {
        Http http = new Http(server.getURI());
        assertThat(http.postJson("/circuit", key(), "{}").statusCode()).isEqualTo(200);
        int runs = api.runs.get();

        store.down = true;
        int before = store.acquires.get();
        for (int i = 0; i < 3; i++) {
            HttpResponse<byte[]> r = http.postJson("/circuit", key(), "{}");
            assertThat(r.statusCode()).isEqualTo(503);
            // store-unavailable-retry-after (2 s) until the third failure opens the circuit: then the probe interval
            assertThat(r.headers().firstValue("Retry-After")).hasValue(i < 2 ? "2" : "1");
        }
        assertThat(circuit.state()).isEqualTo(StoreCircuit.State.OPEN);
        assertThat(store.acquires.get()).isEqualTo(before + 3);

        // the circuit is open: 40 more new keys; only probes (one per 300 ms) reach the store
        int asked = store.acquires.get();
        for (int i = 0; i < 40; i++) {
            HttpResponse<byte[]> r = http.postJson("/circuit", key(), "{}");
            assertThat(r.statusCode()).isEqualTo(503);
            assertThat(Http.body(r)).contains("\"code\":\"idempotency-store-unavailable\"");
            assertThat(r.headers().firstValue("Retry-After")).hasValue("1"); // the next probe is at most 300 ms away
        }
        assertThat(store.acquires.get() - asked).as("calls that reached the store while it was known down")
            .isLessThan(40);
        assertThat(api.runs.get()).isEqualTo(runs);

        // the store is back: within a few probe intervals a new key runs again
        store.down = false;
        int status = 0;
        long deadline = System.nanoTime() + 10_000_000_000L;
        while (status != 200 && System.nanoTime() < deadline) {
            status = http.postJson("/circuit", key(), "{}").statusCode();
            if (status != 200) {
                Thread.sleep(50);
            }
        }
        assertThat(status).isEqualTo(200);
        assertThat(circuit.state()).isEqualTo(StoreCircuit.State.CLOSED);
        assertThat(api.runs.get()).isEqualTo(runs + 1);
    }
}
