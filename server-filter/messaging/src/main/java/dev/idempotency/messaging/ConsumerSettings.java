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
 * @param retryDelay      how long a message whose handler failed the first time waits before it comes
 *                        back; each later failure of the same message doubles the wait, up to
 *                        {@code retryDelayMax} (see {@link #retryDelay(int)})
 * @param inProgressDelay how long a message waits before it comes back when its id is being
 *                        processed elsewhere, or the store did not answer
 * @param transactional   whether the handler runs in the store's database transaction (the inbox,
 *                        PostgreSQL only)
 * @param retryDelayMax   the longest wait after a failure; at or below {@code retryDelay}, every
 *                        retry waits {@code retryDelay}
 */
public record ConsumerSettings(String name, Duration lease, Duration retention, int maxAttempts, Duration retryDelay,
                               Duration inProgressDelay, boolean transactional, Duration retryDelayMax) {

    public static final Duration DEFAULT_LEASE = Duration.ofSeconds(30);
    public static final Duration DEFAULT_RETENTION = Duration.ofDays(7);
    public static final int DEFAULT_MAX_ATTEMPTS = 5;
    public static final Duration DEFAULT_RETRY_DELAY = Duration.ofSeconds(5);
    public static final Duration DEFAULT_IN_PROGRESS_DELAY = Duration.ofSeconds(2);
    public static final Duration DEFAULT_RETRY_DELAY_MAX = Duration.ofSeconds(30);

    /** Settings whose retries back off up to {@link #DEFAULT_RETRY_DELAY_MAX} (or {@code retryDelay}, when longer). */
    public ConsumerSettings(String name, Duration lease, Duration retention, int maxAttempts, Duration retryDelay,
                            Duration inProgressDelay, boolean transactional) {
        this(name, lease, retention, maxAttempts, retryDelay, inProgressDelay, transactional, DEFAULT_RETRY_DELAY_MAX);
    }

    public ConsumerSettings {
        if (name == null || name.isBlank()) {
            throw new IllegalArgumentException("a consumer needs a name");
        }
        positive(lease, "lease");
        positive(retention, "retention");
        positive(retryDelay, "retryDelay");
        positive(inProgressDelay, "inProgressDelay");
        positive(retryDelayMax, "retryDelayMax");
        if (maxAttempts < 1) {
            throw new IllegalArgumentException("maxAttempts must be at least 1, was " + maxAttempts);
        }
    }

    /**
     * How long a message waits after its handler failed {@code failures} times: {@code retryDelay}
     * after the first failure, doubled after each later one, never more than {@code retryDelayMax}
     * (nor less than {@code retryDelay}). With the defaults: 5 s, 10 s, 20 s, then dead-lettered
     * at the fifth failure after 30 s more.
     *
     * @param failures how many times the handler has failed for the message, at least 1
     * @return the wait before the message comes back
     */
    public Duration retryDelay(int failures) {
        Duration cap = retryDelayMax.compareTo(retryDelay) > 0 ? retryDelayMax : retryDelay;
        int doublings = Math.max(0, Math.min(failures - 1, 62));
        Duration delay = retryDelay;
        for (int i = 0; i < doublings && delay.compareTo(cap) < 0; i++) {
            delay = delay.multipliedBy(2);
        }
        return delay.compareTo(cap) > 0 ? cap : delay;
    }

    /** @return the defaults for a consumer named {@code name} */
    public static ConsumerSettings of(String name) {
        return new ConsumerSettings(name, DEFAULT_LEASE, DEFAULT_RETENTION, DEFAULT_MAX_ATTEMPTS, DEFAULT_RETRY_DELAY,
            DEFAULT_IN_PROGRESS_DELAY, false);
    }

    public ConsumerSettings withLease(Duration value) {
        return new ConsumerSettings(name, value, retention, maxAttempts, retryDelay, inProgressDelay, transactional, retryDelayMax);
    }

    public ConsumerSettings withRetention(Duration value) {
        return new ConsumerSettings(name, lease, value, maxAttempts, retryDelay, inProgressDelay, transactional, retryDelayMax);
    }

    public ConsumerSettings withMaxAttempts(int value) {
        return new ConsumerSettings(name, lease, retention, value, retryDelay, inProgressDelay, transactional, retryDelayMax);
    }

    public ConsumerSettings withRetryDelay(Duration value) {
        return new ConsumerSettings(name, lease, retention, maxAttempts, value, inProgressDelay, transactional, retryDelayMax);
    }

    public ConsumerSettings withInProgressDelay(Duration value) {
        return new ConsumerSettings(name, lease, retention, maxAttempts, retryDelay, value, transactional, retryDelayMax);
    }

    public ConsumerSettings withTransactional(boolean value) {
        return new ConsumerSettings(name, lease, retention, maxAttempts, retryDelay, inProgressDelay, value, retryDelayMax);
    }

    public ConsumerSettings withRetryDelayMax(Duration value) {
        return new ConsumerSettings(name, lease, retention, maxAttempts, retryDelay, inProgressDelay, transactional, value);
    }

    private static void positive(Duration d, String what) {
        Objects.requireNonNull(d, what);
        if (d.isNegative() || d.isZero()) {
            throw new IllegalArgumentException(what + " must be positive, was " + d);
        }
    }
}
