package dev.idempotency.client.internal.policy;

import org.junit.jupiter.api.DisplayName;
import org.junit.jupiter.api.Test;

import java.time.Duration;
import java.time.Instant;

import static org.assertj.core.api.Assertions.assertThat;

class RetryAfterTest {

    private static final Instant NOW = Instant.parse("1994-11-06T08:49:00Z");

    @Test
    @DisplayName("C5: Retry-After as delta-seconds")
    void deltaSeconds() {
        assertThat(RetryAfter.parse("2", NOW)).contains(Duration.ofSeconds(2));
        assertThat(RetryAfter.parse(" 120 ", NOW)).contains(Duration.ofSeconds(120));
        assertThat(RetryAfter.parse("0", NOW)).contains(Duration.ZERO);
        assertThat(RetryAfter.parse("99999999999999999999999", NOW)).hasValueSatisfying(d -> assertThat(d).isGreaterThan(Duration.ofDays(365)));
    }

    @Test
    @DisplayName("C5: Retry-After as an HTTP-date in all three RFC 9110 forms")
    void httpDate() {
        assertThat(RetryAfter.parse("Sun, 06 Nov 1994 08:49:37 GMT", NOW)).contains(Duration.ofSeconds(37));
        assertThat(RetryAfter.parse("Sunday, 06-Nov-94 08:49:37 GMT", NOW)).contains(Duration.ofSeconds(37));
        assertThat(RetryAfter.parse("Sun Nov  6 08:49:37 1994", NOW)).contains(Duration.ofSeconds(37));
    }

    @Test
    @DisplayName("C5: a date in the past means now; garbage is ignored")
    void pastAndGarbage() {
        assertThat(RetryAfter.parse("Sun, 06 Nov 1994 08:00:00 GMT", NOW)).contains(Duration.ZERO);
        assertThat(RetryAfter.parse("soon", NOW)).isEmpty();
        assertThat(RetryAfter.parse("-5", NOW)).isEmpty();
        assertThat(RetryAfter.parse("", NOW)).isEmpty();
        assertThat(RetryAfter.parse(null, NOW)).isEmpty();
    }
}
