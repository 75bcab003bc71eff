package dev.idempotency.store.redis;

import dev.idempotency.server.store.StoredResponse;
import dev.idempotency.server.store.StoredResponseCodec;

import java.io.IOException;
import java.nio.charset.StandardCharsets;

/**
 * The record's bytes (the layout is in this package's javadoc): the in-progress record an
 * acquire writes, the checks and decoding of a record read back, and the big-endian numbers in it.
 */
final class RedisRecords {

    private RedisRecords() {
    }

    /** The record format, its first byte. */
    static final byte FORMAT = 2;

    static final byte IN_PROGRESS = 'P';

    static final byte COMPLETED = 'C';

    static final byte RELEASED = 'R';

    static final int STATE = 1;

    static final int TOKEN = 2;

    static final int DEADLINE = 10;

    static final int FINGERPRINT_LENGTH = 18;

    static final int FINGERPRINT = 20;

    /** The length of a W3C {@code traceparent}, version 00. */
    static final int TRACEPARENT_LENGTH = 55;

    /**
     * @param traceparent the holder's trace context, kept after the fingerprint (CONTRACT O4), or
     *     {@code null}: a completion, a release and a takeover cut the record at the fingerprint's end,
     *     and a reader of an earlier version ignores what follows it
     */
    static byte[] inProgressRecord(long token, long deadline, byte[] fingerprint, String traceparent) {
        int traced = traceparent == null ? 0 : traceparent.length();
        byte[] r = new byte[FINGERPRINT + fingerprint.length + traced];
        if (traced > 0) {
            System.arraycopy(traceparent.getBytes(StandardCharsets.US_ASCII), 0, r, FINGERPRINT + fingerprint.length, traced);
        }
        r[0] = FORMAT;
        r[STATE] = IN_PROGRESS;
        writeLong(r, TOKEN, token);
        writeLong(r, DEADLINE, deadline);
        r[FINGERPRINT_LENGTH] = (byte) (fingerprint.length >>> 8);
        r[FINGERPRINT_LENGTH + 1] = (byte) fingerprint.length;
        System.arraycopy(fingerprint, 0, r, FINGERPRINT, fingerprint.length);
        return r;
    }

    /** @return the trace context an in-progress record keeps after its fingerprint, or {@code null} */
    static String inProgressTrace(byte[] record, int fingerprintEnd) {
        if (record.length - fingerprintEnd != TRACEPARENT_LENGTH) {
            return null;
        }
        return new String(record, fingerprintEnd, TRACEPARENT_LENGTH, StandardCharsets.US_ASCII);
    }

    static StoredResponse decodeResponse(String where, byte[] record, int at) throws IOException {
        try {
            return StoredResponseCodec.decode(record, at);
        } catch (IllegalArgumentException e) {
            throw new IOException("record " + where + ": " + e.getMessage(), e);
        }
    }

    static void checkFormat(String where, byte[] record, int minLength) throws IOException {
        if (record.length < Math.max(minLength, 2) || record[0] != FORMAT) {
            throw new IOException("record " + where + " is not a format-" + FORMAT + " record of at least "
                + minLength + " bytes (" + record.length + " bytes, first byte " + (record.length > 0 ? record[0] : -1) + ")");
        }
    }

    static boolean isOne(Object reply) {
        return Long.valueOf(1L).equals(reply);
    }

    static byte[] decimal(long value) {
        return Long.toString(value).getBytes(StandardCharsets.US_ASCII);
    }

    static byte[] longBytes(long value) {
        byte[] b = new byte[8];
        writeLong(b, 0, value);
        return b;
    }

    static void writeLong(byte[] b, int at, long v) {
        for (int i = 7; i >= 0; i--) {
            b[at + i] = (byte) v;
            v >>>= 8;
        }
    }

    static long readLong(byte[] b, int at) {
        long v = 0;
        for (int i = 0; i < 8; i++) {
            v = (v << 8) | (b[at + i] & 0xFF);
        }
        return v;
    }

    static int readShort(byte[] b, int at) {
        return ((b[at] & 0xFF) << 8) | (b[at + 1] & 0xFF);
    }
}
