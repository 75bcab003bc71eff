package dev.idempotency.client.internal.policy;

import org.junit.jupiter.api.DisplayName;
import org.junit.jupiter.api.Test;

import java.time.Duration;
import java.util.LongSummaryStatistics;
import java.util.Random;
import java.util.stream.IntStream;

import static org.assertj.core.api.Assertions.assertThat;

class BackoffTest {

    private static Backoff defaults(long seed) {
        Random random = new Random(seed);
        return new Backoff(Duration.ofMillis(250), 2.0, Duration.ofSeconds(10), Duration.ofSeconds(20), () -> random);
    }

    @Test
    @DisplayName("C3: the ceiling grows base * multiplier^(n-1) and is capped BEFORE the jitter")
    void ceilingIsCappedFirst() {
        Backoff b = defaults(1);
        assertThat(IntStream.rangeClosed(1, 9).mapToLong(b::ceilingMillis).toArray())
            .containsExactly(250, 500, 1000, 2000, 4000, 8000, 10000, 10000, 10000);
        assertThat(b.ceilingMillis(200)).isEqualTo(10000); // no overflow for huge exponents
    }

    @Test
    @DisplayName("C3: full jitter over [0, ceiling]: the first wait is not fixed, and capped waits still spread below the cap")
    void fullJitterRange() {
        Backoff b = defaults(42);
        LongSummaryStatistics first = IntStream.range(0, 2000).mapToLong(i -> b.jitteredMillis(1)).summaryStatistics();
        assertThat(first.getMin()).isBetween(0L, 5L);
        assertThat(first.getMax()).isBetween(245L, 250L);
        assertThat(first.getAverage()).isBetween(110.0, 140.0);

        LongSummaryStatistics capped = IntStream.range(0, 2000).mapToLong(i -> b.jitteredMillis(12)).summaryStatistics();
        assertThat(capped.getMax()).isLessThanOrEqualTo(10_000L);
        assertThat(capped.getMin()).isLessThan(500L);       // jitter applied after the cap: not all at the cap
        assertThat(capped.getAverage()).isBetween(4500.0, 5500.0);
    }

    @Test
    @DisplayName("C3: the same seed gives the same waits")
    void seeded() {
        long[] a = IntStream.rangeClosed(1, 6).mapToLong(defaults(7)::jitteredMillis).toArray();
        Backoff again = defaults(7);
        long[] b = IntStream.rangeClosed(1, 6).mapToLong(again::jitteredMillis).toArray();
        assertThat(a).containsExactly(b);
    }

    @Test
    @DisplayName("C5: the wait is the larger of Retry-After and the backoff, Retry-After clamped to the maximum")
    void retryAfterWinsButIsClamped() {
        Backoff b = defaults(3);
        assertThat(b.waitMillis(1, Duration.ofSeconds(2))).isEqualTo(2000);
        assertThat(b.waitMillis(1, Duration.ofSeconds(600))).isEqualTo(20_000);
        assertThat(b.waitMillis(1, Duration.ZERO)).isBetween(0L, 250L);
        Random r = new Random(5);
        Backoff big = new Backoff(Duration.ofSeconds(5), 1.0, Duration.ofSeconds(5), Duration.ofSeconds(1), () -> r);
        assertThat(IntStream.range(0, 200).mapToLong(i -> big.waitMillis(1, Duration.ofSeconds(1))).min().orElseThrow())
            .isGreaterThanOrEqualTo(1000);
    }
}
