package dev.idempotency.server;

import dev.idempotency.server.store.IdempotencyStore;

import java.time.Duration;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.concurrent.atomic.AtomicInteger;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * Metrics for unit tests without Micrometer: they keep the store latencies they are told (when
 * they say they want them) and count abandoned and fenced completions.
 */
final class RecordedMetrics implements IdempotencyMetrics {
    final boolean wantsLatencies;
    /** {@code operation/ok} or {@code operation/error}, in order. */
    final List<String> latencies = Collections.synchronizedList(new ArrayList<>());
    final AtomicInteger abandoned = new AtomicInteger();
    final AtomicInteger fenced = new AtomicInteger();

    RecordedMetrics(boolean wantsLatencies) {
        this.wantsLatencies = wantsLatencies;
    }

    /** @return a settlement on {@code store} and {@code scheduler} that reports here, its store circuit off */
    Settlement settlement(IdempotencyStore store, IdempotencyScheduler scheduler) {
        return new Settlement(new IdempotencyConfigurationProperties(), store,
            new StoreCalls(this, new StoreCircuit(0, Duration.ofSeconds(1), System::nanoTime, this)), scheduler, this);
    }

    @Override
    public boolean recordsStoreLatency() {
        return wantsLatencies;
    }

    @Override
    public void storeLatency(String operation, long nanos, boolean failed) {
        assertThat(nanos).isNotNegative();
        latencies.add(operation + (failed ? "/error" : "/ok"));
    }

    @Override
    public void completionAbandoned() {
        abandoned.incrementAndGet();
    }

    @Override
    public void outcome(Outcome outcome) {
    }

    @Override
    public void leaseTakenOver() {
    }

    @Override
    public void completionFenced() {
        fenced.incrementAndGet();
    }

    @Override
    public void leaseLost() {
    }
}
