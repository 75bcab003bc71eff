package dev.idempotency.server.internal.fingerprint;

import io.micronaut.core.annotation.Internal;

import java.util.Objects;

/**
 * A parsed {@code Idempotency-Key} value: 1 to 255 printable ASCII characters (0x20-0x7E).
 *
 * <p>The header carries an RFC 9651 sf-string ({@code "abc"}, with {@code \"} and {@code \\}
 * escapes). Unless parsing is strict, a bare value without quotes ({@code abc}, as Stripe
 * clients send) is the same key as {@code "abc"}; a bare value may not contain spaces,
 * {@code "}, {@code \} or {@code ,}.
 *
 * <p>{@link #toString()} never prints the key itself, so a key cannot leak into a log line by
 * accident; use {@link #value()} where the raw key is meant.
 *
 * @param value the key's characters, unescaped
 */
@Internal
public record KeyHeader(String value) {

    /** The longest key accepted, in characters. */
    public static final int MAX_LENGTH = 255;

    public KeyHeader {
        Objects.requireNonNull(value, "value");
        String problem = problemWith(value);
        if (problem != null) {
            throw new MalformedKeyException(problem);
        }
    }

    /**
     * Parses one header field value.
     *
     * @param fieldValue the value as received
     * @param strict     {@code true} to accept only the sf-string form
     * @return the key
     * @throws MalformedKeyException naming what is wrong (never echoing the value)
     */
    public static KeyHeader parse(String fieldValue, boolean strict) {
        Objects.requireNonNull(fieldValue, "fieldValue");
        String v = trimSpaces(fieldValue);
        if (v.isEmpty()) {
            throw new MalformedKeyException("the Idempotency-Key header is empty");
        }
        if (v.charAt(0) != '"') {
            if (strict) {
                throw new MalformedKeyException(
                    "the Idempotency-Key must be a quoted structured-field string, e.g. \"8e03978e-40d5-43e8-bc93-6894a57f9324\"");
            }
            for (int i = 0; i < v.length(); i++) {
                char c = v.charAt(i);
                if (c <= 0x20 || c > 0x7E || c == '"' || c == '\\' || c == ',') {
                    throw new MalformedKeyException(c > 0x7E
                        ? "the Idempotency-Key contains a non-ASCII character; only printable ASCII is allowed"
                        : "an unquoted Idempotency-Key may not contain spaces, quotes, backslashes or commas; send it as a quoted string");
                }
            }
            return new KeyHeader(v);
        }
        int last = v.length() - 1;
        if (last > 0 && v.charAt(last) == '"' && isPlain(v, 1, last)) {
            // the usual key: one quoted string without escapes, taken as it is
            return new KeyHeader(v.substring(1, last));
        }
        StringBuilder out = new StringBuilder(v.length());
        int i = 1;
        while (true) {
            if (i >= v.length()) {
                throw new MalformedKeyException("the Idempotency-Key string has no closing quote");
            }
            char c = v.charAt(i++);
            if (c == '\\') {
                if (i >= v.length()) {
                    throw new MalformedKeyException("the Idempotency-Key string ends inside an escape");
                }
                char e = v.charAt(i++);
                if (e != '"' && e != '\\') {
                    throw new MalformedKeyException(
                        "the Idempotency-Key string has an invalid escape; only \\\" and \\\\ are allowed");
                }
                out.append(e);
            } else if (c == '"') {
                break;
            } else if (c < 0x20 || c > 0x7E) {
                throw new MalformedKeyException(
                    "the Idempotency-Key contains a non-ASCII or control character; only printable ASCII is allowed");
            } else {
                out.append(c);
            }
        }
        if (i != v.length()) {
            throw new MalformedKeyException(
                "the Idempotency-Key header must hold exactly one string; found more after the closing quote");
        }
        return new KeyHeader(out.toString());
    }

    /**
     * @return the key as an RFC 9651 sf-string, quoted and escaped
     */
    public String toHeaderValue() {
        StringBuilder sb = new StringBuilder(value.length() + 2).append('"');
        for (int i = 0; i < value.length(); i++) {
            char c = value.charAt(i);
            if (c == '"' || c == '\\') {
                sb.append('\\');
            }
            sb.append(c);
        }
        return sb.append('"').toString();
    }

    @Override
    public String toString() {
        return "KeyHeader[" + value.length() + " chars]";
    }

    private static String problemWith(String value) {
        if (value.isEmpty()) {
            return "the Idempotency-Key is empty; it must have 1 to 255 characters";
        }
        if (value.length() > MAX_LENGTH) {
            return "the Idempotency-Key is longer than 255 characters";
        }
        for (int i = 0; i < value.length(); i++) {
            char c = value.charAt(i);
            if (c < 0x20 || c > 0x7E) {
                return "the Idempotency-Key contains a non-ASCII or control character; only printable ASCII is allowed";
            }
        }
        return null;
    }

    /** @return whether {@code s} from {@code from} to {@code to} is printable ASCII without a quote or backslash */
    private static boolean isPlain(String s, int from, int to) {
        for (int i = from; i < to; i++) {
            char c = s.charAt(i);
            if (c < 0x20 || c > 0x7E || c == '"' || c == '\\') {
                return false;
            }
        }
        return true;
    }

    private static String trimSpaces(String s) {
        int start = 0;
        int end = s.length();
        while (start < end && (s.charAt(start) == ' ' || s.charAt(start) == '\t')) {
            start++;
        }
        while (end > start && (s.charAt(end - 1) == ' ' || s.charAt(end - 1) == '\t')) {
            end--;
        }
        return s.substring(start, end);
    }
}
