package dev.idempotency.server.internal.engine;

import io.micronaut.core.annotation.Internal;
import java.time.Duration;
import java.util.concurrent.atomic.AtomicLong;

/**
 * How long one route's handler usually takes, learnt by this instance from the requests it ran
 * (an exponentially weighted mean, so it follows a route that gets slower or faster), and the
 * {@code Retry-After} a duplicate in flight is told from it (CONTRACT S11): the time the original
 * probably still needs, within the configured bound. Lock-free; one per route.
 */
@Internal
public final class RouteLatency {

    /** The weight of the newest sample: about the last ten requests count. */
    private static final double ALPHA = 0.2;
    private static final long NONE = -1;

    private final AtomicLong meanNanos = new AtomicLong(NONE);

    /**
     * Records one run of the handler, from its start to its response. A read and a write, not a
     * compare-and-set loop: every request of the route records, on every event loop, and when two
     * record at once one sample is lost, which an estimate of the last ten or so can afford.
     */
    void record(long nanos) {
        long sample = Math.max(0, nanos);
        long prev = meanNanos.get();
        // a release store: nothing here needs the full fence a volatile write costs on every request
        meanNanos.setRelease(prev == NONE ? sample : (long) (prev + ALPHA * (sample - prev)));
    }

    /** @return the usual duration, when the route has run at least once here */
    Duration usual() {
        long mean = meanNanos.get();
        return mean == NONE ? null : Duration.ofNanos(mean);
    }

    /**
     * The wait to suggest to a duplicate of a request still in progress.
     *
     * @param lease          the route's lease
     * @param remainingLease what the store says is left of the original's lease: the original has
     *                       run at least {@code lease - remainingLease} (since its last renewal)
     * @param min            the configured lower bound
     * @param max            the configured upper bound
     * @return the usual duration minus what the original has already run, or one usual duration
     *     again when it is overdue; the remaining lease when nothing was learnt yet; never more
     *     than {@code max} nor than the remaining lease, then never less than {@code min}
     */
    Duration retryAfter(Duration lease, Duration remainingLease, Duration min, Duration max) {
        long mean = meanNanos.get();
        long remaining = Math.max(0, remainingLease.toNanos());
        long wait;
        if (mean == NONE) {
            wait = remaining;
        } else {
            long running = Math.max(0, lease.toNanos() - remaining);
            long left = mean - running;
            wait = left > 0 ? left : mean;
        }
        long upper = max.toNanos();
        return Duration.ofNanos(Math.max(Math.min(min.toNanos(), upper), Math.min(Math.min(wait, remaining), upper)));
    }
}
