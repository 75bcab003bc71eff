package dev.idempotency.server.internal.response;

import java.io.OutputStream;
import java.util.Arrays;

/**
 * The bytes a response body encodes to, collected in a buffer that stays with the thread from
 * response to response, so encoding a body allocates only its exact-size copy. One per thread
 * (see {@link #forThisThread()}); a buffer that grew past {@value #RETAINED_BYTES} bytes is
 * replaced by a small one at the thread's next use. Not thread-safe, and not for nested use on
 * one thread.
 */
final class EncodingBuffer extends OutputStream {

    private static final int RETAINED_BYTES = 64 * 1024;
    private static final ThreadLocal<EncodingBuffer> PER_THREAD = ThreadLocal.withInitial(EncodingBuffer::new);

    private byte[] bytes = new byte[1024];
    private int length;

    /** @return this thread's buffer, emptied */
    static EncodingBuffer forThisThread() {
        EncodingBuffer b = PER_THREAD.get();
        if (b.bytes.length > RETAINED_BYTES) {
            b = new EncodingBuffer();
            PER_THREAD.set(b);
        }
        b.length = 0;
        return b;
    }

    @Override
    public void write(int b) {
        if (length == bytes.length) {
            grow(1);
        }
        bytes[length++] = (byte) b;
    }

    @Override
    public void write(byte[] b, int off, int len) {
        if (len > bytes.length - length) {
            grow(len);
        }
        System.arraycopy(b, off, bytes, length, len);
        length += len;
    }

    /** @return a copy of what was written */
    byte[] toByteArray() {
        return Arrays.copyOf(bytes, length);
    }

    private void grow(int more) {
        bytes = Arrays.copyOf(bytes, Math.max(length + more, bytes.length * 2));
    }
}
