package dev.idempotency.server;

import java.nio.charset.StandardCharsets;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;

/** Buffers small writes in front of a SHA-256 {@link MessageDigest}. Not thread-safe. */
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
                digest.update(bytes, off, len);
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
            digest.update(buf, 0, pos);
            pos = 0;
        }
    }
}
