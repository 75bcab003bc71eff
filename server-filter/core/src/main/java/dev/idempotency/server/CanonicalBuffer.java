package dev.idempotency.server;

import java.nio.charset.StandardCharsets;
import java.util.Arrays;

/**
 * A growable byte buffer that the JSON canonicalizer writes into, with the scratch space it
 * needs to reorder object members. One per thread (see {@link #forThisThread()}), reused from
 * request to request so a canonicalization allocates nothing but what outgrows it. Not
 * thread-safe.
 */
final class CanonicalBuffer {

    /** Buffers that grew past this are dropped after use instead of kept for the next request. */
    private static final int RETAINED_BYTES = 64 * 1024;
    private static final ThreadLocal<CanonicalBuffer> PER_THREAD = ThreadLocal.withInitial(CanonicalBuffer::new);
    private static final byte[] HEX = "0123456789abcdef".getBytes(StandardCharsets.US_ASCII);

    byte[] bytes = new byte[1024];
    int length;
    /** Where a reordered object's members are copied before they are written back. */
    private byte[] scratch = new byte[256];
    /** Digits of the number being canonicalized. */
    char[] digits = new char[32];

    /** @return this thread's buffer, emptied */
    static CanonicalBuffer forThisThread() {
        CanonicalBuffer b = PER_THREAD.get();
        if (b.bytes.length > RETAINED_BYTES || b.scratch.length > RETAINED_BYTES) {
            b = new CanonicalBuffer();
            PER_THREAD.set(b);
        }
        b.length = 0;
        return b;
    }

    int length() {
        return length;
    }

    void truncate(int newLength) {
        length = newLength;
    }

    private void ensure(int more) {
        int need = length + more;
        if (need > bytes.length) {
            bytes = Arrays.copyOf(bytes, Math.max(need, bytes.length * 2));
        }
    }

    void write(int b) {
        if (length == bytes.length) {
            ensure(1);
        }
        bytes[length++] = (byte) b;
    }

    void write(byte[] src, int off, int len) {
        ensure(len);
        System.arraycopy(src, off, bytes, length, len);
        length += len;
    }

    /** Writes ASCII text (no check). */
    void ascii(String s) {
        int n = s.length();
        ensure(n);
        for (int i = 0; i < n; i++) {
            bytes[length++] = (byte) s.charAt(i);
        }
    }

    void ascii(char[] chars, int off, int len) {
        ensure(len);
        for (int i = 0; i < len; i++) {
            bytes[length++] = (byte) chars[off + i];
        }
    }

    /** Copies {@code [from, length)} into the scratch space and returns it; offsets are relative to {@code from}. */
    byte[] copyToScratch(int from) {
        int n = length - from;
        if (scratch.length < n) {
            scratch = new byte[Math.max(n, scratch.length * 2)];
        }
        System.arraycopy(bytes, from, scratch, 0, n);
        return scratch;
    }

    void jsonString(String s) {
        int n = s.length();
        ensure(n + 2);
        bytes[length++] = '"';
        for (int i = 0; i < n; i++) {
            char c = s.charAt(i);
            if (c >= 0x20 && c < 0x80 && c != '"' && c != '\\') {
                if (length == bytes.length) {
                    ensure(1);
                }
                bytes[length++] = (byte) c;
            } else {
                i = special(c, i, n, s, null);
            }
        }
        write('"');
    }

    /**
     * Writes {@code chars[off, off + len)} as an RFC 8785 JSON string: quoted; {@code "} and
     * {@code \} escaped; {@code \b \f \n \r \t} as such; other control characters as lower-case
     * backslash-u-00xx escapes; everything else as UTF-8 (a lone surrogate in its 3-byte form, which no
     * valid text produces, so it cannot collide with a real character).
     */
    void jsonString(char[] chars, int off, int len) {
        ensure(len + 2);
        bytes[length++] = '"';
        int end = off + len;
        for (int i = off; i < end; i++) {
            char c = chars[i];
            if (c >= 0x20 && c < 0x80 && c != '"' && c != '\\') {
                if (length == bytes.length) {
                    ensure(1);
                }
                bytes[length++] = (byte) c;
            } else {
                i = special(c, i, end, null, chars);
            }
        }
        write('"');
    }

    /** Writes one character that is not plain ASCII; returns the index of the last char consumed. */
    private int special(char c, int i, int end, String s, char[] chars) {
        ensure(6);
        if (c == '"' || c == '\\') {
            bytes[length++] = '\\';
            bytes[length++] = (byte) c;
        } else if (c < 0x20) {
            bytes[length++] = '\\';
            switch (c) {
                case '\b' -> bytes[length++] = 'b';
                case '\f' -> bytes[length++] = 'f';
                case '\n' -> bytes[length++] = 'n';
                case '\r' -> bytes[length++] = 'r';
                case '\t' -> bytes[length++] = 't';
                default -> {
                    bytes[length++] = 'u';
                    bytes[length++] = '0';
                    bytes[length++] = '0';
                    bytes[length++] = HEX[c >> 4];
                    bytes[length++] = HEX[c & 0xF];
                }
            }
        } else if (c < 0x800) {
            bytes[length++] = (byte) (0xC0 | (c >> 6));
            bytes[length++] = (byte) (0x80 | (c & 0x3F));
        } else if (Character.isHighSurrogate(c) && i + 1 < end
            && Character.isLowSurrogate(s != null ? s.charAt(i + 1) : chars[i + 1])) {
            int cp = Character.toCodePoint(c, s != null ? s.charAt(i + 1) : chars[i + 1]);
            bytes[length++] = (byte) (0xF0 | (cp >> 18));
            bytes[length++] = (byte) (0x80 | ((cp >> 12) & 0x3F));
            bytes[length++] = (byte) (0x80 | ((cp >> 6) & 0x3F));
            bytes[length++] = (byte) (0x80 | (cp & 0x3F));
            return i + 1;
        } else {
            bytes[length++] = (byte) (0xE0 | (c >> 12));
            bytes[length++] = (byte) (0x80 | ((c >> 6) & 0x3F));
            bytes[length++] = (byte) (0x80 | (c & 0x3F));
        }
        return i;
    }
}
