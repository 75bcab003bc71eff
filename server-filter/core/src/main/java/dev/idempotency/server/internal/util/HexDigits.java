package dev.idempotency.server.internal.util;

import io.micronaut.core.annotation.Internal;

/**
 * The alphabet of the filter's store keys, lowercase hexadecimal digits
 * ({@link IdempotencyStore#isDigestKey}): defined once, for that check and for the in-memory
 * store, which checks and parses a key in one pass.
 */
@Internal
public final class HexDigits {

    /** The value of each ASCII character as a lowercase hexadecimal digit, -1 for the others. */
    private static final byte[] VALUES = new byte[128];

    static {
        java.util.Arrays.fill(VALUES, (byte) -1);
        for (int i = 0; i < 16; i++) {
            VALUES["0123456789abcdef".charAt(i)] = (byte) i;
        }
    }

    private HexDigits() {
    }

    /**
     * @return the value of a lowercase hexadecimal digit, -1 for any other character. A table
     *     lookup without a branch on the character: the digits of a SHA-256 are random, so the
     *     two range checks this replaces were mispredicted about every third character.
     */
    public static int value(char ch) {
        // (127 - ch) >> 31 is -1 past ASCII, which the OR turns into -1 whatever the table says
        return VALUES[ch & 0x7F] | ((0x7F - ch) >> 31);
    }
}
