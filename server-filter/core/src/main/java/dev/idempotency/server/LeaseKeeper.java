package dev.idempotency.server;

import dev.idempotency.server.store.IdempotencyStore;
import io.micronaut.context.annotation.Requires;
import jakarta.inject.Singleton;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import java.time.Duration;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;

/**
 * Keeps the leases of running requests alive (CONTRACT S12). A request registers its lease while
 * its handler runs (and while its streamed response flows); one periodic tick renews, with the
 * holder's fencing token, every lease a third of whose duration has passed since it was taken or
 * last renewed. A renewal that finds the token gone (the lease was taken over) is counted and
 * stops; one that fails because the store is down is tried again at the next tick.
 *
 * <p>Registering and unregistering are two map operations, so a request that ends before its
 * first renewal (almost every request) costs no timer of its own. The tick runs every sixth of
 * the shortest lease seen (between 10 ms and 1 s) on {@link IdempotencyScheduler}'s thread, and
 * the renewals themselves are asynchronous store calls, at most one in flight per lease.
 */
@Singleton
@Requires(property = IdempotencyConfigurationProperties.PREFIX + ".enabled", notEquals = "false")
final class LeaseKeeper {

    private static final Logger LOG = LoggerFactory.getLogger(IdempotencyFilter.class);
    private static final long MIN_TICK_NANOS = TimeUnit.MILLISECONDS.toNanos(10);
    private static final long MAX_TICK_NANOS = TimeUnit.SECONDS.toNanos(1);

    private final IdempotencyStore store;
    private final IdempotencyScheduler scheduler;
    private final StoreCalls calls;
    private final IdempotencyMetrics metrics;
    private final ConcurrentHashMap<Kept, Boolean> kept = new ConcurrentHashMap<>();
    private final Object tickLock = new Object();
    private volatile long tickNanos = Long.MAX_VALUE; // written under tickLock
    private IdempotencyScheduler.Cancellable ticker; // guarded by tickLock

    LeaseKeeper(IdempotencyStore store, IdempotencyScheduler scheduler, StoreCalls calls, IdempotencyMetrics metrics) {
        this.store = store;
        this.scheduler = scheduler;
        this.calls = calls;
        this.metrics = metrics;
    }

    /** A kept lease; {@link #close()} stops renewing it. */
    interface Keeping extends AutoCloseable {
        @Override
        void close();
    }

    /** Starts keeping {@code lease} alive until the returned handle is closed. */
    Keeping keep(Lease lease) {
        long period = Math.max(1, lease.duration().toNanos() / 3);
        Kept k = new Kept(lease, period, System.nanoTime() + period);
        kept.put(k, Boolean.TRUE);
        ensureTicking(period / 2);
        return k;
    }

    /** @return how many leases are kept now (for tests and health) */
    int size() {
        return kept.size();
    }

    private void ensureTicking(long wanted) {
        long tick = Math.max(MIN_TICK_NANOS, Math.min(MAX_TICK_NANOS, wanted));
        if (tick >= tickNanos) {
            return;
        }
        synchronized (tickLock) {
            if (tick >= tickNanos) {
                return;
            }
            tickNanos = tick;
            if (ticker != null) {
                ticker.cancel();
            }
            ticker = scheduler.scheduleEvery(this::tick, tick, TimeUnit.NANOSECONDS);
        }
    }

    private void tick() {
        long now = System.nanoTime();
        for (Kept k : kept.keySet()) {
            if (now - k.due >= 0 && k.renewing.compareAndSet(false, true)) {
                renew(k);
            }
        }
    }

    private void renew(Kept k) {
        Lease lease = k.lease;
        long start = System.nanoTime();
        calls.timed("renew", () -> store.renew(lease.key().storeKey(), lease.token(), lease.duration()))
            .whenComplete((renewed, failure) -> {
                if (failure != null) {
                    LOG.warn("idempotency lease renewal failed key={}: {}", lease.key(), StoreCalls.describe(failure));
                } else if (!renewed) {
                    if (kept.remove(k) != null) {
                        metrics.leaseLost();
                        LOG.warn("idempotency lease lost key={}: another request took it over; this request's result"
                            + " will not be stored", lease.key());
                    }
                } else {
                    k.due = start + k.period;
                }
                k.renewing.set(false);
            });
    }

    /** One kept lease; identity is the object, so the same record held twice is kept twice. */
    private final class Kept implements Keeping {
        final Lease lease;
        final long period;
        final AtomicBoolean renewing = new AtomicBoolean();
        volatile long due;

        Kept(Lease lease, long period, long due) {
            this.lease = lease;
            this.period = period;
            this.due = due;
        }

        @Override
        public void close() {
            kept.remove(this);
        }
    }

    /** @return the tick interval in use, zero before the first lease (for tests) */
    Duration tickInterval() {
        synchronized (tickLock) {
            return tickNanos == Long.MAX_VALUE ? Duration.ZERO : Duration.ofNanos(tickNanos);
        }
    }
}
