package dev.idempotency.server.internal.fingerprint;

import java.util.Arrays;

/**
 * A growable byte buffer that the JSON canonicalizer writes into, with the scratch space it
 * needs to reorder object members and to spell numbers. One per thread (see {@link #forThisThread()}), reused from
 * request to request so a canonicalization allocates nothing but what outgrows it. Not
 * thread-safe.
 */
final class CanonicalBuffer {

    /** Buffers that grew past this are dropped after use instead of kept for the next request. */
    private static final int RETAINED_BYTES = 64 * 1024;
    private static final ThreadLocal<CanonicalBuffer> PER_THREAD = ThreadLocal.withInitial(CanonicalBuffer::new);

    byte[] bytes = new byte[1024];
    int length;
    /** Where a reordered object's members are copied before they are written back. */
    private byte[] scratch = new byte[256];
    /** Digits of the number being canonicalized. */
    char[] digits = new char[32];
    /** The canonicalizer's per-depth member lists, kept for the next canonicalization on this thread. */
    Object members;

    /** @return this thread's buffer, emptied */
    static CanonicalBuffer forThisThread() {
        CanonicalBuffer b = PER_THREAD.get();
        if (b.bytes.length > RETAINED_BYTES || b.scratch.length > RETAINED_BYTES) {
            Object members = b.members;
            b = new CanonicalBuffer();
            b.members = members;
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

    /** Makes room for {@code more} bytes after the current length, so writes up to there copy nothing. */
    void reserve(int more) {
        ensure(more);
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
}
