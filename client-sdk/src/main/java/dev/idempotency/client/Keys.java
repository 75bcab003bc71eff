package dev.idempotency.client;

import java.util.Objects;

/** Validation and header encoding of Idempotency-Keys (CONTRACT C1, C2, S4, S5). */
final class Keys {

    static final int MAX_LENGTH = 255;

    private Keys() {
    }

    /**
     * @return the key, when the server would accept it and it can be written in the format
     * @throws InvalidIdempotencyKeyException naming what is wrong, never the key itself
     */
    static String validate(String key, KeyFormat format) {
        Objects.requireNonNull(key, "key");
        if (key.isEmpty()) {
            throw new InvalidIdempotencyKeyException("the Idempotency-Key is empty; it must have 1 to 255 characters");
        }
        if (key.length() > MAX_LENGTH) {
            throw new InvalidIdempotencyKeyException("the Idempotency-Key has " + key.length()
                + " characters; at most 255 are allowed");
        }
        for (int i = 0; i < key.length(); i++) {
            char c = key.charAt(i);
            if (c < 0x20 || c > 0x7E) {
                throw new InvalidIdempotencyKeyException(String.format(
                    "the Idempotency-Key has a character that is not printable ASCII (U+%04X at index %d); only 0x20-0x7E are allowed",
                    (int) c, i));
            }
            if (format == KeyFormat.BARE && (c == ' ' || c == '"' || c == '\\' || c == ',')) {
                throw new InvalidIdempotencyKeyException(String.format(
                    "the Idempotency-Key cannot be sent as a bare token: it holds '%c' at index %d "
                        + "(a bare key may not contain spaces, quotes, backslashes or commas); use KeyFormat.QUOTED",
                    c, i));
            }
        }
        return key;
    }

    /** @return the header field value for a validated key */
    static String headerValue(String key, KeyFormat format) {
        if (format == KeyFormat.BARE) {
            return key;
        }
        StringBuilder sb = new StringBuilder(key.length() + 2).append('"');
        for (int i = 0; i < key.length(); i++) {
            char c = key.charAt(i);
            if (c == '"' || c == '\\') {
                sb.append('\\');
            }
            sb.append(c);
        }
        return sb.append('"').toString();
    }
}
