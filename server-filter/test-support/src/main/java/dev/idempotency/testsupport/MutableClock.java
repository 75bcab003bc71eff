package dev.idempotency.testsupport;

import java.time.Clock;
import java.time.Duration;
import java.time.Instant;
import java.time.ZoneId;
import java.time.ZoneOffset;
import java.util.concurrent.atomic.AtomicReference;

/**
 * A UTC {@link Clock} that only moves when told to, so no test sleeps to expire a lease or a
 * record; thread-safe. Shared by the store contract suite and the filter's and client's tests.
 */
public final class MutableClock extends Clock {

    private final AtomicReference<Instant> now;

    public MutableClock(Instant start) {
        this.now = new AtomicReference<>(start);
    }

    /** Starts at a fixed, whole-second instant. */
    public MutableClock() {
        this(Instant.parse("2026-01-01T00:00:00Z"));
    }

    public void advance(Duration d) {
        now.updateAndGet(i -> i.plus(d));
    }

    @Override
    public ZoneId getZone() {
        return ZoneOffset.UTC;
    }

    @Override
    public Clock withZone(ZoneId zone) {
        return this; // UTC only: the code under test reads instants
    }

    @Override
    public Instant instant() {
        return now.get();
    }
}
