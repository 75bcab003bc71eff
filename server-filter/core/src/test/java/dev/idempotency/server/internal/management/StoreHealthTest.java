package dev.idempotency.server.internal.management;

import dev.idempotency.server.internal.runtime.StoreCircuit;
import dev.idempotency.server.internal.telemetry.NoopIdempotencyMetrics;
import dev.idempotency.server.store.AcquireResult;
import dev.idempotency.server.store.IdempotencyStore;
import dev.idempotency.server.store.IdempotencyStoreException;
import dev.idempotency.server.store.StoredResponse;
import dev.idempotency.server.store.memory.InMemoryIdempotencyStore;
import dev.idempotency.testsupport.Http;
import io.micronaut.context.annotation.Property;
import io.micronaut.health.HealthStatus;
import io.micronaut.management.health.indicator.HealthResult;
import io.micronaut.runtime.server.EmbeddedServer;
import io.micronaut.test.extensions.junit5.annotation.MicronautTest;
import jakarta.inject.Inject;
import org.junit.jupiter.api.DisplayName;
import org.junit.jupiter.api.Test;
import reactor.core.publisher.Mono;

import java.net.http.HttpResponse;
import java.time.Duration;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;

import static org.assertj.core.api.Assertions.assertThat;

/** O2: the store in Micronaut's /health, here the in-memory store with its fill level. */
@MicronautTest
@Property(name = "endpoints.health.details-visible", value = "ANONYMOUS")
@Property(name = "idempotency.store.memory.max-entries", value = "10")
class StoreHealthTest {

    @Inject
    EmbeddedServer server;
    @Inject
    InMemoryIdempotencyStore store;

    @Test
    @DisplayName("O2: /health shows idempotencyStore UP with the store, the probe's latency and the fill level")
    void inMemoryFillLevel() {
        for (int i = 0; i < 3; i++) {
            store.acquire("health-" + i, new byte[33], Duration.ofSeconds(30)).toCompletableFuture().join();
        }
        HttpResponse<byte[]> r = new Http(server.getURI()).send("GET", "/health", null, null, null);
        String body = Http.body(r);
        assertThat(r.statusCode()).as(body).isEqualTo(200);
        assertThat(body).containsPattern("\"idempotencyStore\":\\{\"name\":\"[^\"]+\",\"status\":\"UP\",\"details\":\\{"
            + "\"store\":\"in memory, this instance only, up to 10 records and 64 MiB\"")
            .contains("\"records\":3").contains("\"fillPercent\":30.0").contains("\"latencyMillis\":");
    }

    @Test
    @DisplayName("O2: a store whose probe fails is DOWN with the reason")
    void downWithTheReason() {
        StoreHealthIndicator indicator = new StoreHealthIndicator(new FailingProbe(),
            new StoreCircuit(3, Duration.ofMillis(500), System::nanoTime, new NoopIdempotencyMetrics()));
        HealthResult result = Mono.from(indicator.getResult()).block(Duration.ofSeconds(5));
        assertThat(result.getStatus()).isEqualTo(HealthStatus.DOWN);
        assertThat((Map<String, Object>) result.getDetails()).containsEntry("error", "connection refused (test)");
    }

    /** A store that is down: every call, the probe included, fails. */
    private static final class FailingProbe implements IdempotencyStore {
        @Override
        public CompletionStage<Map<String, Object>> probe() {
            return CompletableFuture.failedFuture(new IdempotencyStoreException("connection refused (test)"));
        }

        @Override
        public CompletionStage<dev.idempotency.server.store.AcquireResult> acquire(String k, byte[] f, Duration l) {
            return CompletableFuture.failedFuture(new IdempotencyStoreException("down"));
        }

        @Override
        public CompletionStage<Boolean> complete(String k, long t, dev.idempotency.server.store.StoredResponse r, Duration d) {
            return CompletableFuture.failedFuture(new IdempotencyStoreException("down"));
        }

        @Override
        public CompletionStage<Boolean> release(String k, long t) {
            return CompletableFuture.failedFuture(new IdempotencyStoreException("down"));
        }

        @Override
        public CompletionStage<Boolean> renew(String k, long t, Duration l) {
            return CompletableFuture.failedFuture(new IdempotencyStoreException("down"));
        }
    }
}
