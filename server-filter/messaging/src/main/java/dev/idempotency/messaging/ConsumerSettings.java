package dev.idempotency.messaging;

import java.time.Duration;
import java.util.Objects;

/**
 * How one idempotent consumer treats its messages (CONTRACT M4). Immutable; build with
 * {@link #of(String)} and the {@code with...} methods.
 *
 * @param name            the consumer's name: its message ids are its own (two consumers of one
 *                        message each process it once)
 * @param lease           how long a delivery holds its message id while the handler runs; renewed
 *                        while it runs, so only a crashed consumer's hold runs out
 * @param retention       how long a processed id is remembered: the de-duplication window, which
 *                        must outlast the longest redelivery path (a message replayed from the
 *                        dead-letter queue by hand included)
 * @param maxAttempts     how many times the handler may fail for one message before it is
 *                        dead-lettered
 * @param retryDelay      how long a message whose handler failed waits before it comes back
 * @param inProgressDelay how long a message waits before it comes back when its id is being
 *                        processed elsewhere, or the store did not answer
 * @param transactional   whether the handler runs in the store's database transaction (the inbox,
 *                        PostgreSQL only)
 */
public record ConsumerSettings(String name, Duration lease, Duration retention, int maxAttempts, Duration retryDelay,
                               Duration inProgressDelay, boolean transactional) {

    public static final Duration DEFAULT_LEASE = Duration.ofSeconds(30);
    public static final Duration DEFAULT_RETENTION = Duration.ofDays(7);
    public static final int DEFAULT_MAX_ATTEMPTS = 5;
    public static final Duration DEFAULT_RETRY_DELAY = Duration.ofSeconds(5);
    public static final Duration DEFAULT_IN_PROGRESS_DELAY = Duration.ofSeconds(2);

    public ConsumerSettings {
        if (name == null || name.isBlank()) {
            throw new IllegalArgumentException("a consumer needs a name");
        }
        positive(lease, "lease");
        positive(retention, "retention");
        positive(retryDelay, "retryDelay");
        positive(inProgressDelay, "inProgressDelay");
        if (maxAttempts < 1) {
            throw new IllegalArgumentException("maxAttempts must be at least 1, was " + maxAttempts);
        }
    }

    /** @return the defaults for a consumer named {@code name} */
    public static ConsumerSettings of(String name) {
        return new ConsumerSettings(name, DEFAULT_LEASE, DEFAULT_RETENTION, DEFAULT_MAX_ATTEMPTS, DEFAULT_RETRY_DELAY,
            DEFAULT_IN_PROGRESS_DELAY, false);
    }

    public ConsumerSettings withLease(Duration value) {
        return new ConsumerSettings(name, value, retention, maxAttempts, retryDelay, inProgressDelay, transactional);
    }

    public ConsumerSettings withRetention(Duration value) {
        return new ConsumerSettings(name, lease, value, maxAttempts, retryDelay, inProgressDelay, transactional);
    }

    public ConsumerSettings withMaxAttempts(int value) {
        return new ConsumerSettings(name, lease, retention, value, retryDelay, inProgressDelay, transactional);
    }

    public ConsumerSettings withRetryDelay(Duration value) {
        return new ConsumerSettings(name, lease, retention, maxAttempts, value, inProgressDelay, transactional);
    }

    public ConsumerSettings withInProgressDelay(Duration value) {
        return new ConsumerSettings(name, lease, retention, maxAttempts, retryDelay, value, transactional);
    }

    public ConsumerSettings withTransactional(boolean value) {
        return new ConsumerSettings(name, lease, retention, maxAttempts, retryDelay, inProgressDelay, value);
    }

    private static void positive(Duration d, String what) {
        Objects.requireNonNull(d, what);
        if (d.isNegative() || d.isZero()) {
            throw new IllegalArgumentException(what + " must be positive, was " + d);
        }
    }
}
