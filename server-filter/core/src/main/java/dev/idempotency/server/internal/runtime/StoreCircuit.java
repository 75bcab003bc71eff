package dev.idempotency.server.internal.runtime;

import io.micronaut.core.annotation.Internal;
import dev.idempotency.server.internal.telemetry.FilterLog;
import dev.idempotency.server.IdempotencyConfiguration;
import dev.idempotency.server.IdempotencyConfigurationProperties;
import dev.idempotency.server.internal.telemetry.IdempotencyMetrics;
import dev.idempotency.server.store.IdempotencyStore;
import dev.idempotency.server.store.memory.InMemoryIdempotencyStore;
import io.micronaut.context.annotation.Requires;
import jakarta.inject.Inject;
import jakarta.inject.Singleton;
import org.slf4j.Logger;

import java.time.Duration;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;
import java.util.function.LongSupplier;

/**
 * A circuit in front of a store that can go away (CONTRACT S19): after
 * {@code store-circuit-failures} store calls in a row have failed, the store is known to be down,
 * and new keys are answered 503 at once instead of each waiting for its own timeout. While open,
 * one acquire every {@code store-circuit-probe-interval} is let through as a probe; the first
 * store call that succeeds (a probe, or a completion of a request that was already running)
 * closes it. Completions, renewals and releases are never held back: they settle requests that
 * hold keys. The in-memory store cannot go away and gets no circuit. Lock-free.
 */
@Singleton
@Requires(property = IdempotencyConfigurationProperties.PREFIX + ".enabled", notEquals = "false")
@Internal
public final class StoreCircuit {

    private static final Logger LOG = FilterLog.LOG;

    /** What the circuit is doing. */
    public enum State {
        /** Calls go through. */
        CLOSED,
        /** The store is known down: new keys are answered at once, a probe goes through now and then. */
        OPEN,
        /** One probe is in flight. */
        PROBING
    }

    private static final long NOT_OPEN = Long.MIN_VALUE;

    private final int threshold;
    private final long intervalNanos;
    private final LongSupplier nanoTime;
    private final IdempotencyMetrics metrics;
    private final AtomicInteger failures = new AtomicInteger();
    private final AtomicLong openedAt = new AtomicLong(NOT_OPEN);
    private final AtomicLong nextProbeAt = new AtomicLong();
    private final AtomicInteger probing = new AtomicInteger();

    @Inject
    public StoreCircuit(IdempotencyConfiguration config, IdempotencyStore store, IdempotencyMetrics metrics) {
        this(store instanceof InMemoryIdempotencyStore ? 0 : config.getStoreCircuitFailures(),
            config.getStoreCircuitProbeInterval(), System::nanoTime, metrics);
    }

    /**
     * @param threshold failures in a row that open the circuit; 0 never opens it
     * @param interval  how often a probe goes through while it is open
     * @param nanoTime  the time source, {@link System#nanoTime()} outside tests
     * @param metrics   where transitions are counted
     */
    public StoreCircuit(int threshold, Duration interval, LongSupplier nanoTime, IdempotencyMetrics metrics) {
        this.threshold = threshold;
        this.intervalNanos = interval.toNanos();
        this.nanoTime = nanoTime;
        this.metrics = metrics;
    }

    /**
     * @return whether a new key may go to the store now: always when closed; when open, once per
     *     probe interval, as the probe
     */
    public boolean admit() {
        if (openedAt.get() == NOT_OPEN) {
            return true;
        }
        long now = nanoTime.getAsLong();
        long next = nextProbeAt.get();
        if (now - next >= 0 && probing.compareAndSet(0, 1)) {
            if (nextProbeAt.compareAndSet(next, now + intervalNanos)) {
                return true;
            }
            probing.set(0);
        }
        return false;
    }

    /** A store call answered: the store is there. */
    public void succeeded() {
        if (failures.get() != 0) { // a read, not a write, on the hot path of every call
            failures.set(0);
        }
        long opened = openedAt.get();
        if (opened != NOT_OPEN && openedAt.compareAndSet(opened, NOT_OPEN)) {
            probing.set(0);
            metrics.storeCircuit(false);
            LOG.info("idempotency store circuit closed: the store answers again after {} ms",
                (nanoTime.getAsLong() - opened) / 1_000_000);
        }
    }

    /** A store call failed. */
    public void failed(Throwable failure) {
        probing.set(0);
        if (threshold <= 0 || openedAt.get() != NOT_OPEN) {
            return;
        }
        if (failures.incrementAndGet() >= threshold) {
            long now = nanoTime.getAsLong();
            nextProbeAt.set(now + intervalNanos);
            if (openedAt.compareAndSet(NOT_OPEN, now)) {
                metrics.storeCircuit(true);
                LOG.warn("idempotency store circuit OPEN after {} failed store calls in a row (the last: {}): new"
                    + " keys get 503 at once; one probe goes through every {} ms", failures.get(),
                    StoreCalls.describe(failure), intervalNanos / 1_000_000);
            }
        }
    }

    /** @return what the circuit is doing */
    public State state() {
        if (openedAt.get() == NOT_OPEN) {
            return State.CLOSED;
        }
        return probing.get() == 1 ? State.PROBING : State.OPEN;
    }

    /** @return how long until the next probe may go through, when open; {@code null} when closed */
    public Duration untilNextProbe() {
        if (openedAt.get() == NOT_OPEN) {
            return null;
        }
        return Duration.ofNanos(Math.max(0, nextProbeAt.get() - nanoTime.getAsLong()));
    }
}
