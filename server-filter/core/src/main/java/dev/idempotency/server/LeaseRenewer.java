package dev.idempotency.server;

import dev.idempotency.server.store.IdempotencyStore;
import io.micronaut.context.annotation.Requires;
import jakarta.inject.Singleton;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import java.time.Duration;
import java.util.concurrent.ScheduledFuture;
import java.util.concurrent.TimeUnit;

/**
 * Keeps the lease of a running request alive (CONTRACT S12): every third of the lease it
 * renews the record with the holder's fencing token, until the request ends. A renewal that
 * finds the token gone (the lease was taken over) is counted and stops; a renewal that fails
 * because the store is down is retried at the next tick.
 */
@Singleton
@Requires(property = IdempotencyConfigurationProperties.PREFIX + ".enabled", notEquals = "false")
final class LeaseRenewer {

    private static final Logger LOG = LoggerFactory.getLogger(IdempotencyFilter.class);
    private static final long MIN_PERIOD_MILLIS = 10;

    private final IdempotencyStore store;
    private final IdempotencyScheduler scheduler;
    private final IdempotencyMetrics metrics;

    LeaseRenewer(IdempotencyStore store, IdempotencyScheduler scheduler, IdempotencyMetrics metrics) {
        this.store = store;
        this.scheduler = scheduler;
        this.metrics = metrics;
    }

    /** A running renewal; {@link #close()} stops it. */
    interface Renewal extends AutoCloseable {
        @Override
        void close();
    }

    Renewal start(String storeKey, long token, Duration lease, String keyHash) {
        long period = Math.max(MIN_PERIOD_MILLIS, lease.toMillis() / 3);
        Task task = new Task(storeKey, token, lease, keyHash);
        task.future = scheduler.executor().scheduleWithFixedDelay(task, period, period, TimeUnit.MILLISECONDS);
        return task;
    }

    private final class Task implements Runnable, Renewal {
        private final String storeKey;
        private final long token;
        private final Duration lease;
        private final String keyHash;
        private volatile ScheduledFuture<?> future;
        private volatile boolean closed;

        Task(String storeKey, long token, Duration lease, String keyHash) {
            this.storeKey = storeKey;
            this.token = token;
            this.lease = lease;
            this.keyHash = keyHash;
        }

        @Override
        public void run() {
            if (closed) {
                return;
            }
            long start = System.nanoTime();
            try {
                boolean renewed = store.renew(storeKey, token, lease);
                metrics.storeLatency("renew", System.nanoTime() - start, false);
                if (!renewed && !closed) {
                    metrics.leaseLost();
                    LOG.warn("idempotency lease lost key={}: another request took it over; this request's result will not be stored",
                        keyHash);
                    close();
                }
            } catch (RuntimeException e) {
                metrics.storeLatency("renew", System.nanoTime() - start, true);
                LOG.warn("idempotency lease renewal failed key={}: {}", keyHash, e.toString());
            }
        }

        @Override
        public void close() {
            closed = true;
            ScheduledFuture<?> f = future;
            if (f != null) {
                f.cancel(false);
            }
        }
    }
}
