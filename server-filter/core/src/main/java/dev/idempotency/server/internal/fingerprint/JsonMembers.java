package dev.idempotency.server.internal.fingerprint;

import dev.idempotency.server.internal.fingerprint.JsonCanonicalizer.NotCanonicalizableException;

import java.lang.invoke.MethodHandles;
import java.lang.invoke.VarHandle;
import java.nio.ByteOrder;
import java.nio.charset.StandardCharsets;
import java.util.Arrays;

/**
 * The members of one object as written: the byte ranges of each name and of each
 * {@code "name":value}, and for a plain ASCII name its first 8 bytes packed into a sort key
 * (byte order is UTF-16 order for ASCII, and zero padding sorts a prefix first), so most
 * comparisons are one comparison of two longs.
 */
final class JsonMembers {
    private static final VarHandle BIG_ENDIAN_LONG =
        MethodHandles.byteArrayViewVarHandle(long[].class, ByteOrder.BIG_ENDIAN);

    int[] nameStarts = new int[8];
    int[] nameEnds = new int[8];
    int[] ends = new int[8];
    long[] keys = new long[8];
    boolean[] plain = new boolean[8];
    int count;
    private int[] order = new int[8];

    void add(int nameStart, int nameEnd, int end, boolean plainName, byte[] bytes) {
        if (count == nameStarts.length) {
            int n = count * 2;
            nameStarts = Arrays.copyOf(nameStarts, n);
            nameEnds = Arrays.copyOf(nameEnds, n);
            ends = Arrays.copyOf(ends, n);
            keys = Arrays.copyOf(keys, n);
            plain = Arrays.copyOf(plain, n);
        }
        nameStarts[count] = nameStart;
        nameEnds[count] = nameEnd;
        ends[count] = end;
        plain[count] = plainName;
        if (plainName) {
            int from = nameStart + 1;
            int len = Math.min(8, nameEnd - 1 - from);
            long key;
            if (from + 8 <= bytes.length) { // the bytes after a short name are masked off
                key = len == 0 ? 0 : (long) BIG_ENDIAN_LONG.get(bytes, from) & (-1L << (8 * (8 - len)));
            } else {
                key = 0;
                for (int k = 0; k < 8; k++) {
                    key = (key << 8) | (k < len ? bytes[from + k] : 0);
                }
            }
            keys[count] = key;
        }
        count++;
    }

    /** Compares the names of members {@code x} and {@code y} in JCS order; 0 for the same name. */
    int compare(byte[] bytes, int x, int y) {
        if (plain[x] && plain[y]) {
            int c = Long.compare(keys[x], keys[y]); // ASCII bytes: the signed comparison is right
            if (c != 0 || (nameEnds[x] - nameStarts[x] <= 10 && nameEnds[y] - nameStarts[y] <= 10)) {
                return c;
            }
        }
        return compareNames(bytes, nameStarts[x], nameEnds[x], bytes, nameStarts[y], nameEnds[y]);
    }

    /** Rewrites the members, which end at {@code out}'s end, in name order; fails on a duplicate name. */
    void reorder(CanonicalBuffer out) throws NotCanonicalizableException {
        if (order.length < count) {
            order = new int[nameStarts.length];
        }
        for (int i = 0; i < count; i++) {
            order[i] = i;
        }
        byte[] bytes = out.bytes;
        for (int i = 1; i < count; i++) { // insertion sort: objects have few members
            int m = order[i];
            int j = i - 1;
            int c;
            while (j >= 0 && (c = compare(bytes, order[j], m)) >= 0) {
                if (c == 0) {
                    throw NumberScanner.invalid("duplicate member name");
                }
                order[j + 1] = order[j];
                j--;
            }
            order[j + 1] = m;
        }
        int from = nameStarts[0];
        byte[] copy = out.copyToScratch(from);
        out.truncate(from);
        for (int i = 0; i < count; i++) {
            int m = order[i];
            if (i > 0) {
                out.write(',');
            }
            out.write(copy, nameStarts[m] - from, ends[m] - nameStarts[m]);
        }
    }

    /**
     * Compares two names written canonically ({@code "..."}, quotes included) in the UTF-16
     * code-unit order of the strings they stand for, as JCS sorts members. Plain ASCII is
     * compared byte for byte; from the first escape or non-ASCII byte on, code units are decoded.
     */
    static int compareNames(byte[] a, int aStart, int aEnd, byte[] b, int bStart, int bEnd) {
        int i = aStart + 1;
        int j = bStart + 1;
        int aLast = aEnd - 1;
        int bLast = bEnd - 1;
        while (i < aLast && j < bLast) {
            byte x = a[i];
            byte y = b[j];
            if (x < 0x20 || x == '\\' || y < 0x20 || y == '\\') {
                Utf16 ca = new Utf16(a, i, aLast);
                Utf16 cb = new Utf16(b, j, bLast);
                while (true) {
                    int ua = ca.next();
                    int ub = cb.next();
                    if (ua != ub) {
                        return ua == -1 ? -1 : ub == -1 ? 1 : ua - ub;
                    }
                    if (ua == -1) {
                        return 0;
                    }
                }
            }
            if (x != y) {
                return x - y;
            }
            i++;
            j++;
        }
        return i < aLast ? 1 : j < bLast ? -1 : 0;
    }

    /** The UTF-16 code units of canonically written text (escapes decoded, UTF-8 decoded). */
    static final class Utf16 {
        private final byte[] b;
        private final int end;
        private int i;
        private int pendingLow = -1;

        Utf16(byte[] b, int from, int end) {
            this.b = b;
            this.i = from;
            this.end = end;
        }

        /** @return the next code unit, or -1 at the end */
        int next() {
            if (pendingLow >= 0) {
                int low = pendingLow;
                pendingLow = -1;
                return low;
            }
            if (i >= end) {
                return -1;
            }
            int c = b[i] & 0xFF;
            int cp;
            if (c == '\\') {
                byte e = b[i + 1];
                cp = switch (e) {
                    case 'b' -> '\b';
                    case 'f' -> '\f';
                    case 'n' -> '\n';
                    case 'r' -> '\r';
                    case 't' -> '\t';
                    case 'u' -> Integer.parseInt(new String(b, i + 2, 4, StandardCharsets.US_ASCII), 16);
                    default -> e; // \" and \\
                };
                i += e == 'u' ? 6 : 2;
            } else if (c < 0x80) {
                cp = c;
                i++;
            } else if (c < 0xE0) {
                cp = ((c & 0x1F) << 6) | (b[i + 1] & 0x3F);
                i += 2;
            } else if (c < 0xF0) {
                cp = ((c & 0x0F) << 12) | ((b[i + 1] & 0x3F) << 6) | (b[i + 2] & 0x3F);
                i += 3;
            } else {
                cp = ((c & 0x07) << 18) | ((b[i + 1] & 0x3F) << 12) | ((b[i + 2] & 0x3F) << 6) | (b[i + 3] & 0x3F);
                i += 4;
            }
            if (cp >= 0x10000) {
                pendingLow = Character.lowSurrogate(cp);
                return Character.highSurrogate(cp);
            }
            return cp;
        }
    }
}
