package dev.idempotency.server;

import jakarta.annotation.PreDestroy;
import io.micronaut.context.annotation.Requires;
import jakarta.inject.Singleton;

import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.ScheduledThreadPoolExecutor;
import java.util.concurrent.atomic.AtomicInteger;

/**
 * The filter's own timer, for the lease keeper's tick, completion retries and the pauses of
 * {@code inFlightWait}. Its tasks only start store calls or complete stages; they never wait.
 * Kept apart from the application's {@code scheduled} executor so a slow store cannot delay the
 * application's jobs (or the other way round), and set to drop cancelled tasks at once. Two
 * daemon threads, started on first use, stopped with the context.
 */
@Singleton
@Requires(property = IdempotencyConfigurationProperties.PREFIX + ".enabled", notEquals = "false")
final class IdempotencyScheduler {

    private static final int THREADS = 2;

    // A ScheduledThreadPoolExecutor starts no thread before its first task, so creating it here
    // starts nothing yet (no I/O, no threads in the constructor).
    private final ScheduledThreadPoolExecutor executor;

    IdempotencyScheduler() {
        AtomicInteger n = new AtomicInteger();
        executor = new ScheduledThreadPoolExecutor(THREADS, r -> {
            Thread t = new Thread(r, "idempotency-timer-" + n.incrementAndGet());
            t.setDaemon(true);
            return t;
        });
        executor.setRemoveOnCancelPolicy(true);
    }

    ScheduledExecutorService executor() {
        return executor;
    }

    @PreDestroy
    void close() {
        executor.shutdownNow();
    }
}
