package dev.idempotency.server.store.memory;

import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.LongAdder;

final class OncePerMinute {
    private static final long WARN_EVERY_MILLIS = TimeUnit.MINUTES.toMillis(1);

    /** An adder: a full store counts an eviction per new record, on every event loop. */
    private final LongAdder since = new LongAdder();
    /** When the last line was written, by the store's clock; none yet at first. */
    private final AtomicLong last = new AtomicLong(Long.MIN_VALUE);

    /**
     * Counts one event at {@code now}, the store clock's time the caller read already (no
     * clock read per eviction); a clock set back counts as a minute gone.
     *
     * @return how many to report now, or 0 when a line was written less than a minute ago
     */
    long count(long now) {
        since.increment();
        long previous = last.get();
        boolean due = previous == Long.MIN_VALUE || now - previous >= WARN_EVERY_MILLIS || now < previous;
        if (due && last.compareAndSet(previous, now)) {
            long count = since.sum();
            since.add(-count);
            return count;
        }
        return 0;
    }
}
