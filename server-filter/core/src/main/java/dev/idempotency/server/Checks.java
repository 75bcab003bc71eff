package dev.idempotency.server;

import io.micronaut.core.annotation.Internal;

import java.time.Duration;
import java.util.regex.Pattern;

/**
 * The value checks of the settings classes (whose setters fail the application's startup) and of
 * the stores' arguments, with one message shape: the name (a full setting name such as
 * {@code idempotency.lease}, or an argument's name), what it must be, and the value it was.
 * Shared by core, the Redis and the PostgreSQL modules; not an API.
 */
@Internal
public final class Checks {

    private static final Pattern HEADER_NAME = Pattern.compile("[!#$%&'*+.^_`|~0-9A-Za-z-]+");

    private Checks() {
    }

    /**
     * @param value   the value set
     * @param setting the full setting name, e.g. {@code idempotency.lease}, or an argument's name
     * @return the value, when it is more than zero
     * @throws IllegalArgumentException otherwise
     */
    public static Duration positive(Duration value, String setting) {
        if (value == null || value.isNegative() || value.isZero()) {
            throw new IllegalArgumentException(setting + " must be a positive duration, was " + value);
        }
        return value;
    }

    /**
     * @param value   the value set
     * @param setting the full setting name
     * @return the value, when it is zero or more
     * @throws IllegalArgumentException otherwise
     */
    public static Duration notNegative(Duration value, String setting) {
        if (value == null || value.isNegative()) {
            throw new IllegalArgumentException(setting + " may not be negative, was " + value);
        }
        return value;
    }

    /**
     * @param value   the value set
     * @param min     the smallest value allowed
     * @param setting the full setting name
     * @return the value, when it is at least {@code min}
     * @throws IllegalArgumentException otherwise
     */
    public static int atLeast(int value, int min, String setting) {
        if (value < min) {
            throw new IllegalArgumentException(setting + " must be at least " + min + ", was " + value);
        }
        return value;
    }

    /**
     * @param value   the value set
     * @param min     the smallest value allowed
     * @param setting the full setting name
     * @return the value, when it is at least {@code min}
     * @throws IllegalArgumentException otherwise
     */
    public static long atLeast(long value, long min, String setting) {
        if (value < min) {
            throw new IllegalArgumentException(setting + " must be at least " + min + ", was " + value);
        }
        return value;
    }

    /**
     * @param value   the value set
     * @param setting the full setting name
     * @return the value, when it is an HTTP header name (an RFC 9110 token)
     * @throws IllegalArgumentException otherwise
     */
    public static String headerName(String value, String setting) {
        if (value == null || !HEADER_NAME.matcher(value).matches()) {
            throw new IllegalArgumentException(setting + " must be a header name, was " + value);
        }
        return value;
    }
}
