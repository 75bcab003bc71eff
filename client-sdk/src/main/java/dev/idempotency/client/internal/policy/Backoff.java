package dev.idempotency.client.internal.policy;

import dev.idempotency.client.IdempotentClientConfig;
import io.github.resilience4j.core.IntervalBiFunction;
import io.github.resilience4j.core.functions.Either;
import io.micronaut.core.annotation.Internal;

import java.time.Duration;
import java.util.function.Supplier;
import java.util.random.RandomGenerator;

/**
 * The wait before the next attempt (CONTRACT C3, C5), as resilience4j's interval function:
 * exponential, CAPPED FIRST, then full jitter: {@code random(0, min(cap, base * multiplier^(n-1)))},
 * and never less than the server's {@code Retry-After} (clamped to the configured maximum).
 *
 * <p>resilience4j's own {@code IntervalFunction.ofExponentialRandomBackoff} randomizes before it
 * caps, so once the cap is reached every wait equals the cap and the clients synchronize again;
 * and its first wait is never near zero. Here the jitter spans the whole capped ceiling.
 */
@Internal
public final class Backoff implements IntervalBiFunction<Attempt> {

    private final long baseMillis;
    private final double multiplier;
    private final long capMillis;
    private final long maxRetryAfterMillis;
    private final Supplier<RandomGenerator> random;

    public Backoff(IdempotentClientConfig config) {
        this(config.baseDelay(), config.multiplier(), config.maxDelay(), config.maxRetryAfter(), config::random);
    }

    public Backoff(Duration base, double multiplier, Duration cap, Duration maxRetryAfter, Supplier<RandomGenerator> random) {
        this.baseMillis = base.toMillis();
        this.multiplier = multiplier;
        this.capMillis = cap.toMillis();
        this.maxRetryAfterMillis = maxRetryAfter.toMillis();
        this.random = random;
    }

    /**
     * @param retry 1 for the wait before the second attempt, 2 before the third...
     * @return the jitter's upper bound: the exponential delay, capped
     */
    public long ceilingMillis(int retry) {
        double exponential = baseMillis * Math.pow(multiplier, Math.max(0, retry - 1));
        return (long) Math.min((double) capMillis, exponential);
    }

    /** @return a full-jitter wait: uniform in [0, ceiling] */
    public long jitteredMillis(int retry) {
        long ceiling = ceilingMillis(retry);
        return ceiling <= 0 ? 0 : random.get().nextLong(ceiling + 1);
    }

    /** @return the wait: the larger of the jittered backoff and the clamped Retry-After */
    public long waitMillis(int retry, Duration retryAfter) {
        long backoff = jitteredMillis(retry);
        if (retryAfter == null) {
            return backoff;
        }
        return Math.max(backoff, Math.min(retryAfter.toMillis(), maxRetryAfterMillis));
    }

    @Override
    public Long apply(Integer retry, Either<Throwable, Attempt> outcome) {
        Duration retryAfter = outcome.isRight() ? outcome.get().retryAfter() : null;
        return waitMillis(retry, retryAfter);
    }
}
