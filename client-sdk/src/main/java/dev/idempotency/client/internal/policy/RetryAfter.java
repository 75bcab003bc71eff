package dev.idempotency.client.internal.policy;

import io.micronaut.core.annotation.Internal;

import java.time.Duration;
import java.time.Instant;
import java.time.ZoneOffset;
import java.time.ZonedDateTime;
import java.time.format.DateTimeFormatter;
import java.time.format.DateTimeFormatterBuilder;
import java.time.format.DateTimeParseException;
import java.time.temporal.ChronoField;
import java.util.Locale;
import java.util.Optional;

/**
 * Parses {@code Retry-After} (RFC 9110 section 10.2.3): delta-seconds, or an HTTP-date in any
 * of the three forms a recipient must accept (IMF-fixdate, obsolete RFC 850, asctime). A date in
 * the past means "now"; an unparseable value is ignored.
 */
@Internal
public final class RetryAfter {

    private static final DateTimeFormatter IMF_FIXDATE = DateTimeFormatter.RFC_1123_DATE_TIME;
    private static final DateTimeFormatter ASCTIME = new DateTimeFormatterBuilder()
        .parseCaseInsensitive()
        .appendPattern("EEE MMM")
        .appendLiteral(' ')
        .optionalStart().appendLiteral(' ').optionalEnd()
        .appendPattern("d HH:mm:ss yyyy")
        .toFormatter(Locale.US)
        .withZone(ZoneOffset.UTC);

    private RetryAfter() {
    }

    public static Optional<Duration> parse(String value, Instant now) {
        if (value == null) {
            return Optional.empty();
        }
        String v = value.trim();
        if (v.isEmpty()) {
            return Optional.empty();
        }
        if (v.chars().allMatch(c -> c >= '0' && c <= '9')) {
            try {
                return Optional.of(Duration.ofSeconds(Long.parseLong(v)));
            } catch (NumberFormatException | ArithmeticException tooLarge) {
                return Optional.of(Duration.ofSeconds(Long.MAX_VALUE / 1_000_000_000L));
            }
        }
        Instant at = parseDate(v, now);
        if (at == null) {
            return Optional.empty();
        }
        Duration d = Duration.between(now, at);
        return Optional.of(d.isNegative() ? Duration.ZERO : d);
    }

    private static Instant parseDate(String v, Instant now) {
        try {
            return ZonedDateTime.parse(v, IMF_FIXDATE).toInstant();
        } catch (DateTimeParseException ignored) {
            // try the obsolete forms
        }
        try {
            // RFC 850: a two-digit year more than 50 years in the future is in the past century
            DateTimeFormatter rfc850 = new DateTimeFormatterBuilder()
                .parseCaseInsensitive()
                .appendPattern("EEEE, dd-MMM-")
                .appendValueReduced(ChronoField.YEAR, 2, 2, now.atZone(ZoneOffset.UTC).getYear() - 49)
                .appendPattern(" HH:mm:ss 'GMT'")
                .toFormatter(Locale.US)
                .withZone(ZoneOffset.UTC);
            return ZonedDateTime.parse(v, rfc850).toInstant();
        } catch (DateTimeParseException ignored) {
            // try asctime
        }
        try {
            return ZonedDateTime.parse(v, ASCTIME).toInstant();
        } catch (DateTimeParseException ignored) {
            return null;
        }
    }
}
