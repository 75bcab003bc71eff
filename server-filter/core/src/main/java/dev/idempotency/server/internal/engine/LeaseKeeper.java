package dev.idempotency.server.internal.engine;

import dev.idempotency.server.internal.telemetry.FilterLog;
import dev.idempotency.server.IdempotencyConfigurationProperties;
import dev.idempotency.server.internal.telemetry.IdempotencyMetrics;
import dev.idempotency.server.internal.runtime.IdempotencyScheduler;
import dev.idempotency.server.store.IdempotencyStore;
import dev.idempotency.server.internal.runtime.RequestLoop;
import dev.idempotency.server.internal.runtime.StoreCalls;
import io.micronaut.context.annotation.Requires;
import jakarta.inject.Singleton;
import org.slf4j.Logger;

import java.lang.invoke.MethodHandles;
import java.lang.invoke.VarHandle;
import java.time.Duration;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;

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

    private static final Logger LOG = FilterLog.LOG;
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
            k.setTimer(timer);
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
            if (now - k.due() >= 0 && k.startRenewing()) {
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
                    k.renewedAt(start);
                }
                k.renewed();
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

        private static final VarHandle STATE;
        private static final VarHandle RENEWING;
        private static final VarHandle DUE;
        private static final VarHandle TIMER;

        static {
            try {
                MethodHandles.Lookup lookup = MethodHandles.lookup();
                STATE = lookup.findVarHandle(Kept.class, "state", int.class);
                RENEWING = lookup.findVarHandle(Kept.class, "renewing", int.class);
                DUE = lookup.findVarHandle(Kept.class, "due", long.class);
                TIMER = lookup.findVarHandle(Kept.class, "timer", Future.class);
            } catch (ReflectiveOperationException e) {
                throw new ExceptionInInitializerError(e);
            }
        }

        final Lease lease;
        final long period;
        // plain fields behind VarHandles: set in the constructor without a fence (the object is
        // published to other threads by the loop's timer queue or the map), then read and changed
        // with the ordering each use needs. A request that ends before its first renewal (almost
        // all) pays no fence and no atomic object here but the one exchange in close.
        private int state; // PENDING, REGISTERED or CLOSED
        private int renewing; // 1 while a renewal is in flight
        private long due;
        private Future<?> timer;

        Kept(Lease lease, long period, long due) {
            this.lease = lease;
            this.period = period;
            this.due = due;
        }

        long due() {
            return (long) DUE.getAcquire(this);
        }

        void renewedAt(long start) {
            DUE.setRelease(this, start + period);
        }

        /** @return whether this call may renew: no other renewal of this lease is in flight */
        boolean startRenewing() {
            return RENEWING.compareAndSet(this, 0, 1);
        }

        void renewed() {
            RENEWING.setRelease(this, 0);
        }

        void setTimer(Future<?> t) {
            TIMER.setRelease(this, t);
        }

        void register() {
            kept.put(this, Boolean.TRUE);
            if (!STATE.compareAndSet(this, PENDING, REGISTERED)) {
                kept.remove(this); // closed meanwhile
            }
        }

        @Override
        public void close() {
            int was = (int) STATE.getAndSet(this, CLOSED);
            if (was == REGISTERED) {
                kept.remove(this);
            } else if (was == PENDING) {
                Future<?> t = (Future<?>) TIMER.getAcquire(this);
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
