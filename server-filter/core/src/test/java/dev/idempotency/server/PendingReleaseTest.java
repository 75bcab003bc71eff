package dev.idempotency.server;

import ch.qos.logback.classic.Level;
import dev.idempotency.server.http.IdempotencyFilter;
import dev.idempotency.server.internal.fingerprint.RequestDigest;
import dev.idempotency.server.store.AcquireResult;
import dev.idempotency.server.store.IdempotencyStoreException;
import dev.idempotency.server.store.UnconfirmedAcquireException;
import dev.idempotency.server.store.memory.InMemoryIdempotencyStore;
import dev.idempotency.testsupport.Await;
import dev.idempotency.testsupport.Http;
import dev.idempotency.testsupport.LogCapture;
import io.micronaut.context.annotation.Property;
import io.micronaut.context.annotation.Replaces;
import io.micronaut.context.annotation.Requires;
import io.micronaut.http.HttpResponse;
import io.micronaut.http.annotation.Body;
import io.micronaut.http.annotation.Controller;
import io.micronaut.http.annotation.Post;
import io.micronaut.runtime.server.EmbeddedServer;
import io.micronaut.test.extensions.junit5.annotation.MicronautTest;
import jakarta.inject.Inject;
import jakarta.inject.Singleton;
import org.junit.jupiter.api.DisplayName;
import org.junit.jupiter.api.Test;

import java.time.Clock;
import java.time.Duration;
import java.util.Map;
import java.util.Set;
import java.util.UUID;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicInteger;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * CONTRACT S12, S24: a release the store could not take (its primary died, say) is retried in the
 * background until it lands, so the key is free again within moments, not a whole lease (30 s here)
 * later: after an acquire no replica confirmed, and after a 5xx. The lines say what happened.
 */
@MicronautTest
@Property(name = "spec.name", value = "PendingReleaseTest")
@Property(name = "idempotency.lease", value = "30s")
class PendingReleaseTest {

    @Inject
    EmbeddedServer server;
    @Inject
    Store store;
    @Inject
    Api api;
    @Inject
    IdempotencyConfiguration config;

    /** A store whose primary is "down" for the releases of the keys in {@link #downFor}, for a number of tries. */
    @Singleton
    @Replaces(InMemoryIdempotencyStore.class)
    @Requires(property = "spec.name", value = "PendingReleaseTest")
    static class Store extends InMemoryBackedStore {
        final Set<String> unconfirmed = ConcurrentHashMap.newKeySet();
        final Map<String, AtomicInteger> downFor = new ConcurrentHashMap<>();
        final AtomicInteger releases = new AtomicInteger();

        Store(Clock clock) {
            super(new InMemoryIdempotencyStore(clock, 10_000));
        }

        @Override
        public CompletionStage<AcquireResult> acquire(String storeKey, byte[] fingerprint, Duration lease) {
            return super.acquire(storeKey, fingerprint, lease).thenCompose(result -> {
                if (result instanceof AcquireResult.Acquired acquired && unconfirmed.remove(storeKey)) {
                    // as the Redis store with wait-replicas: written, not confirmed, and its own release failed
                    return CompletableFuture.failedFuture(new UnconfirmedAcquireException("not confirmed by a replica"
                        + " (test)", storeKey, acquired.fencingToken(), false,
                        new IdempotencyStoreException("the primary is gone (test)")));
                }
                return CompletableFuture.completedFuture(result);
            });
        }

        @Override
        public CompletionStage<Boolean> release(String storeKey, long fencingToken) {
            releases.incrementAndGet();
            AtomicInteger down = downFor.get(storeKey);
            if (down != null && down.getAndDecrement() > 0) {
                return CompletableFuture.failedFuture(new IdempotencyStoreException("the primary is gone (test)"));
            }
            return super.release(storeKey, fencingToken);
        }
    }

    @Controller("/pending")
    @Requires(property = "spec.name", value = "PendingReleaseTest")
    static class Api {
        final Map<String, AtomicInteger> runs = new ConcurrentHashMap<>();

        @Post("/{id}")
        @Idempotent
        HttpResponse<Map<String, Object>> run(String id, @Body Map<String, Object> body) {
            int n = runs.computeIfAbsent(id, k -> new AtomicInteger()).incrementAndGet();
            return body.containsKey("fail") && n == 1 ? HttpResponse.serverError() : HttpResponse.ok(Map.of("run", n));
        }
    }

    private static String key() {
        return "\"" + UUID.randomUUID() + "\"";
    }

    @Test
    @DisplayName("S24: an unconfirmed acquire whose release failed: 503, then released in the background, and the"
        + " key runs once within seconds, not after its 30 s lease")
    void unconfirmedAcquireIsReleasedInTheBackground() throws InterruptedException {
        Http http = new Http(server.getURI());
        String id = "a-" + UUID.randomUUID();
        String key = key();
        try (LogCapture log = LogCapture.of(IdempotencyFilter.LOG_CATEGORY, Level.INFO).start()) {
            store.unconfirmed.add(storeKeyFor(key));
            store.downFor.put(storeKeyFor(key), new AtomicInteger(3)); // 3 more tries fail
            assertThat(http.postJson("/pending/" + id, key, "{}").statusCode()).isEqualTo(503);
            assertThat(api.runs.get(id)).isNull();

            long start = System.nanoTime();
            Await.until("the key runs", Duration.ofSeconds(10),
                () -> http.postJson("/pending/" + id, key, "{}").statusCode() == 200);
            assertThat(Duration.ofNanos(System.nanoTime() - start)).isLessThan(Duration.ofSeconds(10));
            assertThat(api.runs.get(id)).hasValue(1);
            assertThat(log.lines()).anyMatch(l -> l.contains("release pending"))
                .anyMatch(l -> l.contains("release landed") && l.contains("after 5 tries"));
        }
    }

    @Test
    @DisplayName("S12/S14: a 5xx whose release failed is released in the background; the retry runs again soon")
    void failedReleaseAfterA5xxIsRetried() throws InterruptedException {
        Http http = new Http(server.getURI());
        String id = "b-" + UUID.randomUUID();
        String key = key();
        try (LogCapture log = LogCapture.of(IdempotencyFilter.LOG_CATEGORY, Level.INFO).start()) {
            store.downFor.put(storeKeyFor(key), new AtomicInteger(2));
            assertThat(http.postJson("/pending/" + id, key, "{\"fail\":true}").statusCode()).isEqualTo(500);
            Await.until("the retry runs", Duration.ofSeconds(10),
                () -> http.postJson("/pending/" + id, key, "{\"fail\":true}").statusCode() == 200);
            assertThat(api.runs.get(id)).hasValue(2);
            assertThat(log.lines()).anyMatch(l -> l.contains("release pending"))
                .anyMatch(l -> l.contains("release landed"));
        }
    }

    /** @return the store key of {@code key} (quoted) on {@code /pending/{id}}, for an anonymous caller */
    private String storeKeyFor(String key) {
        return RequestDigest.begin(RequestDigest.CALLER_ANONYMOUS, config.getAnonymousScope(), "POST", "/pending/{id}",
            key.substring(1, key.length() - 1)).storeKey();
    }
}
