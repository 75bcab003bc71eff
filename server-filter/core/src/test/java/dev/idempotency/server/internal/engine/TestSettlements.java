package dev.idempotency.server.internal.engine;

import dev.idempotency.server.IdempotencyConfigurationProperties;
import dev.idempotency.server.internal.runtime.IdempotencyScheduler;
import dev.idempotency.server.internal.runtime.StoreCalls;
import dev.idempotency.server.internal.runtime.StoreCircuit;
import dev.idempotency.server.internal.telemetry.RecordedMetrics;
import dev.idempotency.server.store.IdempotencyStore;

import java.time.Duration;

/** Settlements for unit tests, on a store and scheduler of the test's own. */
final class TestSettlements {

    private TestSettlements() {
    }

    /** @return a settlement on {@code store} and {@code scheduler} that reports to {@code metrics}, its store circuit off */
    static Settlement on(IdempotencyStore store, IdempotencyScheduler scheduler, RecordedMetrics metrics) {
        return new Settlement(new IdempotencyConfigurationProperties(), store,
            new StoreCalls(metrics, new StoreCircuit(0, Duration.ofSeconds(1), System::nanoTime, metrics), null), scheduler, metrics);
    }
}
