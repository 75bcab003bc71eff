package dev.idempotency.testsupport;

import java.time.Duration;
import java.util.function.BooleanSupplier;

/**
 * Waiting in tests for something another thread does: the condition is checked every 10 ms (or
 * every {@code every}, for a check that costs what it waits for) until it holds, and the test
 * fails with what it waited for once the time is up. For effects with no event to wait on (a log
 * line, a counter, a broker's delivery); a latch or a future is better where the code offers one.
 * It sleeps between checks, so it is for a test's own thread only: never call it from an event
 * loop, a handler or a consumer callback. Every caller today is a test method; the store TCK, the
 * one module that takes this module in compile scope, uses its {@code MutableClock} and
 * {@code Http} but not this, and nothing under its BlockHound suite calls this.
 */
public final class Await {

    /** The default wait: long enough for a broker's redelivery on a loaded 2-core machine. */
    public static final Duration DEFAULT = Duration.ofSeconds(60);

    private static final Duration EVERY = Duration.ofMillis(10);

    private Await() {
    }

    /** Waits up to {@link #DEFAULT} for {@code condition}. */
    public static void until(String what, BooleanSupplier condition) throws InterruptedException {
        until(what, DEFAULT, condition);
    }

    /**
     * Waits up to {@code within} for {@code condition}.
     *
     * @throws AssertionError naming {@code what} when it does not hold in time
     */
    public static void until(String what, Duration within, BooleanSupplier condition) throws InterruptedException {
        until(what, within, EVERY, condition);
    }

    /**
     * Waits up to {@code within} for {@code condition}, checking it every {@code every}: for a check
     * that is itself work (a count over a table, say) that would take a core from what it waits for.
     *
     * @throws AssertionError naming {@code what} when it does not hold in time
     */
    public static void until(String what, Duration within, Duration every, BooleanSupplier condition)
            throws InterruptedException {
        long deadline = System.nanoTime() + within.toNanos();
        while (!condition.getAsBoolean()) {
            if (System.nanoTime() - deadline > 0) {
                throw new AssertionError("timed out after " + within.toMillis() + " ms waiting for " + what);
            }
            Thread.sleep(every.toMillis());
        }
    }
}
