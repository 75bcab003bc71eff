package dev.idempotency.server.internal.engine;

import dev.idempotency.server.internal.response.Responses;
import org.junit.jupiter.api.DisplayName;
import org.junit.jupiter.api.Test;

import java.time.Duration;

import static org.assertj.core.api.Assertions.assertThat;

/** S11: the Retry-After a duplicate in flight is told, from what the route usually takes. */
class RouteLatencyTest {

    private static final Duration LEASE = Duration.ofSeconds(30);
    private static final Duration MAX = Duration.ofSeconds(5);
    private static final Duration MIN = Duration.ofMillis(1);

    @Test
    @DisplayName("S11: nothing learnt yet: the remaining lease, within the bound")
    void nothingLearnt() {
        RouteLatency l = new RouteLatency();
        assertThat(l.usual()).isNull();
        assertThat(l.retryAfter(LEASE, Duration.ofSeconds(29), MIN, MAX)).isEqualTo(MAX);
        assertThat(l.retryAfter(LEASE, Duration.ofSeconds(2), MIN, MAX)).isEqualTo(Duration.ofSeconds(2));
    }

    @Test
    @DisplayName("S11: the usual duration minus what the original has run: a 2.5 s operation 1 s in is told 1.5 s")
    void usualMinusRunning() {
        RouteLatency l = new RouteLatency();
        l.record(Duration.ofMillis(2500).toNanos());
        assertThat(l.retryAfter(LEASE, Duration.ofSeconds(29), MIN, MAX)).isEqualTo(Duration.ofMillis(1500));
        // a 200 ms operation: well under the one-second floor of the header (Responses rounds up to 1)
        RouteLatency fast = new RouteLatency();
        fast.record(Duration.ofMillis(200).toNanos());
        assertThat(Responses.retryAfterSeconds(fast.retryAfter(LEASE, LEASE, MIN, MAX))).isEqualTo(1);
    }

    @Test
    @DisplayName("S11: an original running longer than usual: check again after one usual duration, within the bound")
    void overdue() {
        RouteLatency l = new RouteLatency();
        l.record(Duration.ofSeconds(2).toNanos());
        assertThat(l.retryAfter(LEASE, Duration.ofSeconds(20), MIN, MAX)).isEqualTo(Duration.ofSeconds(2));
        RouteLatency slow = new RouteLatency();
        slow.record(Duration.ofSeconds(60).toNanos());
        assertThat(slow.retryAfter(LEASE, Duration.ofSeconds(20), MIN, MAX)).isEqualTo(MAX);
    }

    @Test
    @DisplayName("S11: the estimate follows the route: newer runs weigh more")
    void follows() {
        RouteLatency l = new RouteLatency();
        l.record(Duration.ofSeconds(4).toNanos());
        for (int i = 0; i < 30; i++) {
            l.record(Duration.ofMillis(100).toNanos());
        }
        assertThat(l.usual()).isBetween(Duration.ofMillis(100), Duration.ofMillis(110));
    }

    @Test
    @DisplayName("S11: the configured lower bound wins over a short estimate")
    void lowerBound() {
        RouteLatency l = new RouteLatency();
        l.record(Duration.ofMillis(200).toNanos());
        assertThat(l.retryAfter(LEASE, LEASE, Duration.ofSeconds(2), MAX)).isEqualTo(Duration.ofSeconds(2));
    }
}
