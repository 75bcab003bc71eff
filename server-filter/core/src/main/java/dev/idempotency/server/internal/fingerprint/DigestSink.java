package dev.idempotency.server.internal.fingerprint;

import java.nio.charset.StandardCharsets;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;

/**
 * Length-prefixed fields written into one SHA-256 {@link MessageDigest}, through a small buffer
 * so short fields cost no digest call of their own. Digests are cloned from one prototype
 * instead of looked up, and each thread reuses one sink ({@link #forThisThread()}). Not
 * thread-safe.
 */
final class DigestSink {

    private static final MessageDigest PROTOTYPE;

    static {
        try {
            PROTOTYPE = MessageDigest.getInstance("SHA-256");
        } catch (NoSuchAlgorithmException e) {
            throw new IllegalStateException("SHA-256 is required by every Java platform", e);
        }
    }

    private static final ThreadLocal<DigestSink> PER_THREAD = ThreadLocal.withInitial(DigestSink::new);

    private final MessageDigest digest;
    private final byte[] buf = new byte[128];
    private int pos;
    private int uses;

    DigestSink() {
        this(newDigest());
    }

    /**
     * @return this thread's sink, emptied: a digest and its buffer reused from request to
     *     request instead of cloned for each. Not for nested use on one thread: a sink taken here
     *     is good until the same thread takes it again.
     */
    static DigestSink forThisThread() {
        DigestSink sink = PER_THREAD.get();
        sink.digest.reset();
        sink.pos = 0;
        sink.uses++;
        return sink;
    }

    /** @return how many times this sink was taken by {@link #forThisThread()}: a taker's use ended when it changed */
    int use() {
        return uses;
    }

    private DigestSink(MessageDigest digest) {
        this.digest = digest;
    }

    static MessageDigest newDigest() {
        try {
            return (MessageDigest) PROTOTYPE.clone();
        } catch (CloneNotSupportedException e) {
            try {
                return MessageDigest.getInstance("SHA-256");
            } catch (NoSuchAlgorithmException impossible) {
                throw new IllegalStateException(impossible);
            }
        }
    }

    void write(int b) {
        if (pos == buf.length) {
            flush();
        }
        buf[pos++] = (byte) b;
    }

    /** Writes bytes as they are (no length prefix); large ones go straight to the digest. */
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

    /** Writes a length-prefixed field: 4-byte big-endian length, then the bytes. */
    void field(byte[] bytes) {
        field(bytes, 0, bytes.length);
    }

    /** Writes {@code len} bytes of {@code bytes} from {@code off} as a length-prefixed field, as {@link #field(byte[])}. */
    void field(byte[] bytes, int off, int len) {
        write(len >>> 24);
        write(len >>> 16);
        write(len >>> 8);
        write(len);
        write(bytes, off, len);
    }

    /**
     * Writes a length-prefixed UTF-8 field. ASCII text that fits the buffer is checked and copied
     * in one pass, without an intermediate array; other text goes through its UTF-8 bytes.
     */
    void field(String s) {
        int n = s.length();
        if (n > buf.length - 4) {
            field(s.getBytes(StandardCharsets.UTF_8));
            return;
        }
        if (buf.length - pos < n + 4) {
            flush();
        }
        int start = pos;
        buf[start] = (byte) (n >>> 24);
        buf[start + 1] = (byte) (n >>> 16);
        buf[start + 2] = (byte) (n >>> 8);
        buf[start + 3] = (byte) n;
        int at = start + 4;
        for (int i = 0; i < n; i++) {
            char c = s.charAt(i);
            if (c >= 0x80) {
                // not ASCII: nothing of this field was flushed, so it is written again as UTF-8
                pos = start;
                field(s.getBytes(StandardCharsets.UTF_8));
                return;
            }
            buf[at + i] = (byte) c;
        }
        pos = at + n;
    }

    /** Writes a number as a field of its own: 4 bytes, big-endian. */
    void field(int value) {
        write(0);
        write(0);
        write(0);
        write(4);
        write(value >>> 24);
        write(value >>> 16);
        write(value >>> 8);
        write(value);
    }

    /** The digest of what was written so far; this sink goes on as if nothing happened. */
    byte[] finishCopy() {
        flush();
        try {
            return ((MessageDigest) digest.clone()).digest();
        } catch (CloneNotSupportedException e) {
            throw new IllegalStateException("SHA-256 digests of this platform cannot be cloned", e);
        }
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
