package dev.idempotency.client;

import java.time.Duration;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.TimeUnit;

/**
 * Waits between attempts. The client never sleeps any other way, so a test can pass a sleeper
 * that records the requested waits and returns at once (and advances its fake {@code Clock}).
 */
@FunctionalInterface
public interface Sleeper {

    /**
     * @param duration how long to wait, never negative
     * @return a stage that completes once the wait is over; it must not block the caller
     */
    CompletionStage<Void> sleep(Duration duration);

    /**
     * @return the real sleeper: completes after the duration on {@link CompletableFuture#delayedExecutor}
     */
    static Sleeper system() {
        return duration -> duration.isZero()
            ? CompletableFuture.completedFuture(null)
            : CompletableFuture.runAsync(() -> { },
                CompletableFuture.delayedExecutor(duration.toNanos(), TimeUnit.NANOSECONDS));
    }
}
