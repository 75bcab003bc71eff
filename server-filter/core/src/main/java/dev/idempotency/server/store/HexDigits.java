package dev.idempotency.server.store;

/**
 * The alphabet of the filter's store keys, lowercase hexadecimal digits
 * ({@link IdempotencyStore#isDigestKey}): defined once, for that check and for the in-memory
 * store, which checks and parses a key in one pass.
 */
final class HexDigits {

    private HexDigits() {
    }

    /** @return the value of a lowercase hexadecimal digit, -1 for any other character */
    static int value(char ch) {
        if (ch >= '0' && ch <= '9') {
            return ch - '0';
        }
        return ch >= 'a' && ch <= 'f' ? ch - 'a' + 10 : -1;
    }
}
