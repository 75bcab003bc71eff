package dev.idempotency.server.internal.telemetry;

import dev.idempotency.server.IdempotencyOutcome;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.concurrent.atomic.AtomicInteger;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * Metrics for unit tests without Micrometer: they keep the store latencies they are told (when
 * they say they want them) and count abandoned and fenced completions.
 */
public final class RecordedMetrics implements IdempotencyMetrics {
    private final boolean wantsLatencies;
    /** {@code operation/ok} or {@code operation/error}, in order. */
    public final List<String> latencies = Collections.synchronizedList(new ArrayList<>());
    public final AtomicInteger abandoned = new AtomicInteger();
    public final AtomicInteger fenced = new AtomicInteger();

    public RecordedMetrics(boolean wantsLatencies) {
        this.wantsLatencies = wantsLatencies;
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
    public void outcome(IdempotencyOutcome outcome) {
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
