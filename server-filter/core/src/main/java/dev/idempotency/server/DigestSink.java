package dev.idempotency.server;

import java.nio.charset.StandardCharsets;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;

/**
 * Buffers small writes in front of a SHA-256 {@link MessageDigest}. Not thread-safe. Every byte
 * passes through {@link #drain}, so a subclass can capture the stream instead of hashing it.
 */
class DigestSink {

    private final MessageDigest digest;
    private final byte[] buf = new byte[4096];
    private int pos;

    DigestSink() {
        try {
            digest = MessageDigest.getInstance("SHA-256");
        } catch (NoSuchAlgorithmException e) {
            throw new IllegalStateException("SHA-256 is required by every Java platform", e);
        }
    }

    void write(int b) {
        if (pos == buf.length) {
            flush();
        }
        buf[pos++] = (byte) b;
    }

    void write(byte[] bytes, int off, int len) {
        if (len > buf.length - pos) {
            flush();
            if (len > buf.length) {
                drain(bytes, off, len);
                return;
            }
        }
        System.arraycopy(bytes, off, buf, pos, len);
        pos += len;
    }

    void write(byte[] bytes) {
        write(bytes, 0, bytes.length);
    }

    /** Writes {@code s} as UTF-8, passing ASCII through without allocating. */
    void writeUtf8(String s) {
        int n = s.length();
        for (int i = 0; i < n; i++) {
            char c = s.charAt(i);
            if (c >= 0x80) {
                write(s.substring(i).getBytes(StandardCharsets.UTF_8));
                return;
            }
            write(c);
        }
    }

    private static final byte[] HEX = "0123456789abcdef".getBytes(StandardCharsets.US_ASCII);

    /**
     * Writes {@code s} as an RFC 8785 JSON string: quoted; {@code "} and {@code \\} escaped;
     * {@code \b \f \n \r \t} as such; other control characters as lower-case backslash-u-00xx escapes;
     * everything else as UTF-8 (a lone surrogate in its 3-byte form, which no valid text produces).
     */
    void writeJsonString(String s) {
        write('"');
        int n = s.length();
        for (int i = 0; i < n; i++) {
            char c = s.charAt(i);
            if (c >= 0x20 && c < 0x80) {
                if (c == '"' || c == '\\') {
                    write('\\');
                }
                if (pos == buf.length) {
                    flush();
                }
                buf[pos++] = (byte) c;
            } else if (c < 0x20) {
                write('\\');
                switch (c) {
                    case '\b' -> write('b');
                    case '\f' -> write('f');
                    case '\n' -> write('n');
                    case '\r' -> write('r');
                    case '\t' -> write('t');
                    default -> {
                        write('u');
                        write('0');
                        write('0');
                        write(HEX[c >> 4]);
                        write(HEX[c & 0xF]);
                    }
                }
            } else if (c < 0x800) {
                write(0xC0 | (c >> 6));
                write(0x80 | (c & 0x3F));
            } else if (Character.isHighSurrogate(c) && i + 1 < n && Character.isLowSurrogate(s.charAt(i + 1))) {
                int cp = Character.toCodePoint(c, s.charAt(++i));
                write(0xF0 | (cp >> 18));
                write(0x80 | ((cp >> 12) & 0x3F));
                write(0x80 | ((cp >> 6) & 0x3F));
                write(0x80 | (cp & 0x3F));
            } else {
                // includes a lone surrogate, written in its 3-byte form (as WTF-8 does): never
                // valid UTF-8, so it cannot collide with any real character
                write(0xE0 | (c >> 12));
                write(0x80 | ((c >> 6) & 0x3F));
                write(0x80 | (c & 0x3F));
            }
        }
        write('"');
    }

    /** Writes a length-prefixed field: 4-byte big-endian length, then the bytes. */
    void field(byte[] bytes) {
        int n = bytes.length;
        write(n >>> 24);
        write(n >>> 16);
        write(n >>> 8);
        write(n);
        write(bytes);
    }

    void field(String s) {
        field(s.getBytes(StandardCharsets.UTF_8));
    }

    byte[] finish() {
        flush();
        return digest.digest();
    }

    private void flush() {
        if (pos > 0) {
            drain(buf, 0, pos);
            pos = 0;
        }
    }

    /** Where buffered bytes go: the digest; a subclass may capture them instead. */
    void drain(byte[] bytes, int off, int len) {
        digest.update(bytes, off, len);
    }
}
