package dev.idempotency.server;

import dev.idempotency.server.store.IdempotencyStore;
import io.micronaut.context.annotation.Requires;
import jakarta.inject.Singleton;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import java.time.Duration;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;

/**
 * Keeps the leases of running requests alive (CONTRACT S12). A request registers its lease while
 * its handler runs (and while its streamed response flows); one periodic tick renews, with the
 * holder's fencing token, every lease a third of whose duration has passed since it was taken or
 * last renewed. A renewal that finds the token gone (the lease was taken over) is counted and
 * stops; one that fails because the store is down is tried again at the next tick.
 *
 * <p>A request on an event loop registers only if it still runs halfway to its first renewal
 * (a timer of its own loop, set and cancelled by that loop's thread); elsewhere it registers at
 * once. Registering and unregistering are two map operations. The tick runs every sixth of
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

    /**
     * Starts keeping {@code lease} alive until the returned handle is closed. Almost every
     * request ends long before its lease needs a renewal, so on an event loop the lease joins the
     * kept ones only if its request still runs halfway to the first renewal: until then it is a
     * timer of the request's own loop, which costs no write another thread sees.
     *
     * @param loop the request's loop (off a Netty event loop the lease is registered at once)
     */
    Keeping keep(Lease lease, RequestLoop loop) {
        long period = Math.max(1, lease.duration().toNanos() / 3);
        Kept k = new Kept(lease, period, System.nanoTime() + period);
        ensureTicking(period / 2);
        Future<?> timer = loop.scheduleHere(k::register, period / 2);
        if (timer == null) {
            k.register();
        } else {
            k.timer = timer;
        }
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

    /**
     * One kept lease; identity is the object, so the same record held twice is kept twice. It is
     * pending (its loop's timer will register it), registered (in the map the tick renews from)
     * or closed; closing a pending one cancels the timer, and a timer that fires anyway finds
     * it closed and takes it out again.
     */
    private final class Kept implements Keeping {
        private static final int PENDING = 0;
        private static final int REGISTERED = 1;
        private static final int CLOSED = 2;

        final Lease lease;
        final long period;
        final AtomicBoolean renewing = new AtomicBoolean();
        final AtomicInteger state = new AtomicInteger(PENDING);
        volatile long due;
        volatile Future<?> timer;

        Kept(Lease lease, long period, long due) {
            this.lease = lease;
            this.period = period;
            this.due = due;
        }

        void register() {
            kept.put(this, Boolean.TRUE);
            if (!state.compareAndSet(PENDING, REGISTERED)) {
                kept.remove(this); // closed meanwhile
            }
        }

        @Override
        public void close() {
            int was = state.getAndSet(CLOSED);
            if (was == REGISTERED) {
                kept.remove(this);
            } else if (was == PENDING) {
                Future<?> t = timer;
                if (t != null) {
                    t.cancel(false);
                }
            }
        }
    }

    /** @return the tick interval in use, zero before the first lease (for tests) */
    Duration tickInterval() {
        synchronized (tickLock) {
            return tickNanos == Long.MAX_VALUE ? Duration.ZERO : Duration.ofNanos(tickNanos);
        }
    }
}
