package dev.idempotency.server.internal.telemetry;

import dev.idempotency.server.IdempotencyOutcome;
import io.micrometer.core.instrument.Counter;
import io.micrometer.core.instrument.Gauge;
import io.micrometer.core.instrument.MeterRegistry;
import io.micrometer.core.instrument.Timer;
import io.micronaut.context.annotation.Requires;
import jakarta.inject.Singleton;

import java.util.EnumMap;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;

/**
 * Micrometer meters, registered when a {@link MeterRegistry} bean exists:
 * <ul>
 *   <li>{@code idempotency.requests} (counter), tag {@code outcome}: executed, replayed,
 *       conflict, mismatch, rejected, store-error;</li>
 *   <li>{@code idempotency.store.latency} (timer), tags {@code operation} (acquire, complete,
 *       release, renew) and {@code result} (ok, error);</li>
 *   <li>{@code idempotency.leases.taken-over}, {@code idempotency.leases.lost},
 *       {@code idempotency.completions.fenced} and {@code idempotency.completions.abandoned}
 *       (counters);</li>
 *   <li>{@code idempotency.store.circuit} (counter), tag {@code transition}: opened, closed; and
 *       {@code idempotency.store.circuit.open} (gauge), 1 while the circuit is open.</li>
 * </ul>
 */
@Singleton
@Requires(classes = MeterRegistry.class)
@Requires(beans = MeterRegistry.class)
final class MicrometerIdempotencyMetrics implements IdempotencyMetrics {

    private final MeterRegistry registry;
    private final Map<IdempotencyOutcome, Counter> outcomes = new EnumMap<>(IdempotencyOutcome.class);
    /** By operation, one map per result: a lookup per call without building a key. */
    private final Map<String, Timer> okTimers = new ConcurrentHashMap<>();
    private final Map<String, Timer> errorTimers = new ConcurrentHashMap<>();
    private final Counter takeovers;
    private final Counter fenced;
    private final Counter abandoned;
    private final Counter lost;
    private final Counter stepsExecuted;
    private final Counter stepsResumed;
    private final Counter circuitOpened;
    private final Counter circuitClosed;
    private final AtomicInteger circuitOpen = new AtomicInteger();

    MicrometerIdempotencyMetrics(MeterRegistry registry) {
        this.registry = registry;
        for (IdempotencyOutcome o : IdempotencyOutcome.values()) {
            if (o == IdempotencyOutcome.RESUMED) {
                continue; // counted as executed: the counter's tags predate it (S22)
            }
            outcomes.put(o, Counter.builder("idempotency.requests").tag("outcome", o.tag())
                .description("Requests under the Idempotency-Key contract, by outcome").register(registry));
        }
        takeovers = Counter.builder("idempotency.leases.taken-over")
            .description("Expired in-progress leases taken over by a retry").register(registry);
        fenced = Counter.builder("idempotency.completions.fenced")
            .description("Completions rejected because the holder's lease had been taken over").register(registry);
        abandoned = Counter.builder("idempotency.completions.abandoned")
            .description("Results that could not be stored within half their lease: the key stays in progress"
                + " until the lease ends, then a retry runs the operation again").register(registry);
        lost = Counter.builder("idempotency.leases.lost")
            .description("Lease renewals that found the lease taken over").register(registry);
        stepsExecuted = Counter.builder("idempotency.steps").tag("outcome", "executed")
            .description("Durable steps whose work ran and whose result was recorded, or that an execution resumed"
                + " from an earlier one's record").register(registry);
        stepsResumed = Counter.builder("idempotency.steps").tag("outcome", "resumed")
            .description("Durable steps whose work ran and whose result was recorded, or that an execution resumed"
                + " from an earlier one's record").register(registry);
        circuitOpened = Counter.builder("idempotency.store.circuit").tag("transition", "opened")
            .description("Times the store circuit opened (the store was known down) or closed again").register(registry);
        circuitClosed = Counter.builder("idempotency.store.circuit").tag("transition", "closed")
            .description("Times the store circuit opened (the store was known down) or closed again").register(registry);
        Gauge.builder("idempotency.store.circuit.open", circuitOpen, AtomicInteger::get)
            .description("1 while the store circuit is open: new keys are answered 503 at once").register(registry);
    }

    @Override
    public void outcome(IdempotencyOutcome outcome) {
        outcomes.get(outcome).increment();
    }

    @Override
    public void storeLatency(String operation, long nanos, boolean failed) {
        String result = failed ? "error" : "ok";
        (failed ? errorTimers : okTimers).computeIfAbsent(operation, k -> Timer.builder("idempotency.store.latency")
            .tag("operation", operation).tag("result", result)
            .description("Idempotency store call latency").register(registry))
            .record(nanos, TimeUnit.NANOSECONDS);
    }

    @Override
    public void leaseTakenOver() {
        takeovers.increment();
    }

    @Override
    public void completionFenced() {
        fenced.increment();
    }

    @Override
    public void completionAbandoned() {
        abandoned.increment();
    }

    @Override
    public void leaseLost() {
        lost.increment();
    }

    @Override
    public void step(boolean resumed) {
        (resumed ? stepsResumed : stepsExecuted).increment();
    }

    @Override
    public void storeCircuit(boolean open) {
        (open ? circuitOpened : circuitClosed).increment();
        circuitOpen.set(open ? 1 : 0);
    }
}
