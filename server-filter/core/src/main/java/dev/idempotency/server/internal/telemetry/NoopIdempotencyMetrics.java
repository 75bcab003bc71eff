package dev.idempotency.server.internal.telemetry;

import dev.idempotency.server.IdempotencyOutcome;
import io.micronaut.context.annotation.Secondary;
import io.micronaut.core.annotation.Internal;
import jakarta.inject.Singleton;

/** Used when Micrometer is not on the classpath or no {@code MeterRegistry} bean exists. */
@Singleton
@Secondary
@Internal
public final class NoopIdempotencyMetrics implements IdempotencyMetrics {

    @Override
    public void outcome(IdempotencyOutcome outcome) {
    }

    @Override
    public void storeLatency(String operation, long nanos, boolean failed) {
    }

    @Override
    public boolean recordsStoreLatency() {
        return false;
    }

    @Override
    public void leaseTakenOver() {
    }

    @Override
    public void completionFenced() {
    }

    @Override
    public void completionAbandoned() {
    }

    @Override
    public void leaseLost() {
    }
}
