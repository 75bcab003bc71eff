package dev.idempotency.server.internal.management;

import dev.idempotency.server.IdempotencyConfigurationProperties;
import dev.idempotency.server.store.IdempotencyStore;
import dev.idempotency.server.internal.runtime.StoreCircuit;
import io.micronaut.context.annotation.Requires;
import io.micronaut.core.async.publisher.Publishers;
import io.micronaut.health.HealthStatus;
import io.micronaut.management.health.indicator.HealthIndicator;
import io.micronaut.management.health.indicator.HealthResult;
import jakarta.inject.Singleton;
import org.reactivestreams.Publisher;

import java.util.LinkedHashMap;
import java.util.Locale;
import java.util.Map;
import java.util.concurrent.CompletionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;

/**
 * The idempotency store in Micronaut's {@code /health} (CONTRACT O2), when micronaut-management
 * is on the classpath: {@code idempotencyStore} is UP when the store's {@link IdempotencyStore#probe()
 * probe} answers within {@value #TIMEOUT_MILLIS} ms, with the store's description, the probe's
 * latency, the store circuit's state (S19: {@code closed}, or {@code open} while new keys are
 * answered 503 at once) and what it found (the in-memory store's fill level, PostgreSQL's table,
 * Redis's round trip); DOWN with the reason otherwise. A probe that finds the store back closes
 * the circuit. Never blocks a thread: the probe is asynchronous
 * like every store call.
 */
@Singleton
@Requires(classes = HealthIndicator.class)
@Requires(property = IdempotencyConfigurationProperties.PREFIX + ".enabled", notEquals = "false")
final class StoreHealthIndicator implements HealthIndicator {

    static final String NAME = "idempotencyStore";
    static final long TIMEOUT_MILLIS = 2000;

    private final IdempotencyStore store;
    private final StoreCircuit circuit;

    StoreHealthIndicator(IdempotencyStore store, StoreCircuit circuit) {
        this.store = store;
        this.circuit = circuit;
    }

    @Override
    public Publisher<HealthResult> getResult() {
        return Publishers.fromCompletableFuture(() -> {
            long start = System.nanoTime();
            return store.probe().toCompletableFuture().orTimeout(TIMEOUT_MILLIS, TimeUnit.MILLISECONDS)
                .handle((found, failure) -> {
                    Map<String, Object> details = new LinkedHashMap<>();
                    details.put("store", store.describe());
                    details.put("latencyMillis", Math.round((System.nanoTime() - start) / 100_000.0) / 10.0);
                    details.put("circuit", circuit.state().name().toLowerCase(Locale.ROOT));
                    if (failure == null) {
                        circuit.succeeded(); // the store answers: no request has to wait for a probe of its own
                        details.putAll(found);
                        return HealthResult.builder(NAME, HealthStatus.UP).details(details).build();
                    }
                    Throwable cause = failure instanceof CompletionException && failure.getCause() != null
                        ? failure.getCause() : failure;
                    details.put("error", cause instanceof TimeoutException
                        ? "no answer within " + TIMEOUT_MILLIS + " ms" : String.valueOf(cause.getMessage()));
                    return HealthResult.builder(NAME, HealthStatus.DOWN).details(details).build();
                });
        });
    }
}
