package dev.idempotency.server.store.memory;

import dev.idempotency.server.internal.util.HexDigits;

import java.util.HexFormat;

import static dev.idempotency.server.store.IdempotencyStore.DIGEST_KEY_LENGTH;

/**
 * A store key of 64 lowercase hexadecimal digits as its 32 bytes: one object of 48 bytes,
 * where the string takes two of 104. Its hash is its first bytes, as random as a SHA-256's.
 * Comparable, as the string was, so that keys a client made collide in one bin of the map
 * still take logarithmic time there (the map's tree bins order comparable keys).
 */
final class HexKey implements Comparable<HexKey> {
    private final long a;
    private final long b;
    private final long c;
    private final long d;

    HexKey(long a, long b, long c, long d) {
        this.a = a;
        this.b = b;
        this.c = c;
        this.d = d;
    }

    @Override
    public boolean equals(Object o) {
        return o instanceof HexKey k && a == k.a && b == k.b && c == k.c && d == k.d;
    }

    @Override
    public int hashCode() {
        return (int) (a ^ (a >>> 32));
    }

    @Override
    public int compareTo(HexKey o) {
        int r = Long.compareUnsigned(a, o.a);
        if (r == 0) {
            r = Long.compareUnsigned(b, o.b);
        }
        if (r == 0) {
            r = Long.compareUnsigned(c, o.c);
        }
        return r != 0 ? r : Long.compareUnsigned(d, o.d);
    }

    /** @return the store key: the 64 digits */
    @Override
    public String toString() {
        HexFormat hex = HexFormat.of();
        return hex.toHexDigits(a) + hex.toHexDigits(b) + hex.toHexDigits(c) + hex.toHexDigits(d);
    }

    /**
     * @return the map's key for {@code storeKey}: a {@link HexKey} for 64 lowercase hexadecimal
     *     digits, else the string itself (so two different store keys never share a map key)
     */
    static Object mapKey(String storeKey) {
        if (storeKey.length() != DIGEST_KEY_LENGTH) {
            return storeKey;
        }
        // one pass that checks and parses (the keys IdempotencyStore.isDigestKey accepts, no others):
        // every acquire and completion comes through here
        long a = 0;
        long b = 0;
        long c = 0;
        long d = 0;
        int invalid = 0; // negative once any character is not a lowercase hex digit
        for (int i = 0; i < 16; i++) {
            int x = HexDigits.value(storeKey.charAt(i));
            int y = HexDigits.value(storeKey.charAt(i + 16));
            int z = HexDigits.value(storeKey.charAt(i + 32));
            int w = HexDigits.value(storeKey.charAt(i + 48));
            invalid |= x | y | z | w;
            a = a << 4 | x;
            b = b << 4 | y;
            c = c << 4 | z;
            d = d << 4 | w;
        }
        return invalid < 0 ? storeKey : new HexKey(a, b, c, d);
    }
}
