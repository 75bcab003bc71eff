package dev.idempotency.server.store;

import java.nio.charset.StandardCharsets;
import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * A {@link StoredResponse} as bytes, for a store that keeps its records as bytes: the in-memory
 * store keeps it after the fingerprint in one array per record, the Redis store after the
 * fingerprint in the record's string. Big-endian:
 * <pre>
 * offset  size  field
 *      0     2  status
 *      2     1  omitted: 1 when the body was too large or streamed and was not kept, else 0
 *      3     4  length h of the header block
 *      7     h  header block: version byte {@value #HEADERS_VERSION}, an int header count, then
 *               per header its name, an int value count and its values; each string an int
 *               byte length and its UTF-8 bytes (exactly {@code getBytes(UTF_8)}). A response
 *               with a reason phrase of its own has version byte {@value #HEADERS_VERSION_WITH_REASON}
 *               and the reason, a string, between the version byte and the header count. A
 *               response that carries the trace context of the run that executed it has version
 *               byte {@value #HEADERS_VERSION_WITH_TRACE}, then the {@code traceparent} and the
 *               reason (empty when none), both strings, then the header count
 *    7+h  rest  body, exactly as sent
 * </pre>
 * Header order and value order are kept. The form is stable: records a store wrote with it are
 * read by later versions, which check the header block's version byte before they read it
 * (version {@value #HEADERS_VERSION_WITH_REASON} is read since 0.1.0; only a response whose route set a
 * reason phrase of its own is written with it; version {@value #HEADERS_VERSION_WITH_TRACE} is
 * read since 0.2.0 and written only when tracing is on, CONTRACT O4).
 *
 * <p>{@link #decode} checks every length against the bytes it is given and throws
 * {@link IllegalArgumentException} for anything this class would not have written, so a store
 * can turn a damaged record into an {@link IdempotencyStoreException} instead of a wrong
 * replay. Stateless and thread-safe.
 */
public final class StoredResponseCodec {

    /** The header block's first byte. */
    public static final int HEADERS_VERSION = 1;
    /** The header block's first byte when a reason phrase of the route's own comes first. */
    public static final int HEADERS_VERSION_WITH_REASON = 2;
    /** The header block's first byte when the executing run's {@code traceparent} (and a reason, maybe empty) come first. */
    public static final int HEADERS_VERSION_WITH_TRACE = 3;

    private static final byte[] NO_PREFIX = new byte[0];
    /** Status, omitted flag and the header block's length. */
    private static final int FIXED = 7;

    private StoredResponseCodec() {
    }

    /**
     * @param response what to encode
     * @return {@code response} in the form above, in a new array of exactly its length
     */
    public static byte[] encode(StoredResponse response) {
        return encode(NO_PREFIX, 0, response);
    }

    /**
     * Encodes behind a store's own header in one array, so a store that keeps a few bytes of its
     * own before the response (the in-memory store's record state) copies the body once.
     *
     * @return the first {@code prefixLength} bytes of {@code prefix}, then {@code response} encoded, in one array
     */
    public static byte[] encode(byte[] prefix, int prefixLength, StoredResponse response) {
        Map<String, List<String>> headers = response.headers();
        // sized first and written straight into the array: an ASCII string (headers almost
        // always are) costs no array of its own
        String reason = response.reason();
        String trace = response.traceparent();
        int block = 5 + (reason == null ? 0 : 4 + reason.length()); // a valid reason and traceparent are ASCII
        if (trace != null) {
            block += 8 + trace.length() + (reason == null ? 0 : -4);
        }
        for (Map.Entry<String, List<String>> h : headers.entrySet()) {
            block += 8 + utf8Length(h.getKey());
            for (String v : h.getValue()) {
                block += 4 + utf8Length(v);
            }
        }
        byte[] out = new byte[prefixLength + FIXED + block + response.bodyLength()];
        System.arraycopy(prefix, 0, out, 0, prefixLength);
        int p = putShort(out, prefixLength, response.status());
        out[p++] = (byte) (response.bodyOmitted() ? 1 : 0);
        p = putInt(out, p, block);
        if (trace != null) {
            out[p++] = HEADERS_VERSION_WITH_TRACE;
            p = putString(out, p, trace);
            p = putString(out, p, reason == null ? "" : reason);
        } else if (reason == null) {
            out[p++] = HEADERS_VERSION;
        } else {
            out[p++] = HEADERS_VERSION_WITH_REASON;
            p = putString(out, p, reason);
        }
        p = putInt(out, p, headers.size());
        for (Map.Entry<String, List<String>> h : headers.entrySet()) {
            p = putString(out, p, h.getKey());
            List<String> values = h.getValue();
            p = putInt(out, p, values.size());
            for (int i = 0; i < values.size(); i++) {
                p = putString(out, p, values.get(i));
            }
        }
        response.copyBodyTo(out, p);
        return out;
    }

    static StoredResponse decode(byte[] in) {
        return decode(in, 0);
    }

    /**
     * @param in     the bytes that hold an encoded response from {@code offset} to their end
     * @param offset where the encoded response starts
     * @return the response
     * @throws IllegalArgumentException when the bytes from {@code offset} are not a response in
     *                                  this form (too short, a length past the end, an unknown
     *                                  header block version, a status outside 100-599, an
     *                                  omitted flag other than 0 or 1, or a body where it says omitted)
     */
    public static StoredResponse decode(byte[] in, int offset) {
        if (offset < 0 || in.length - offset < FIXED + 5) {
            throw malformed("it is " + (in.length - offset) + " bytes long, at least " + (FIXED + 5) + " needed");
        }
        int status = getShort(in, offset);
        byte omitted = in[offset + 2];
        if (omitted != 0 && omitted != 1) {
            throw malformed("the omitted flag is " + omitted);
        }
        int block = getInt(in, offset + 3);
        int p = offset + FIXED;
        if (block < 5 || block > in.length - p) {
            throw malformed("the header block's length is " + block + " where " + (in.length - p) + " bytes follow");
        }
        int end = p + block;
        String reason = null;
        String trace = null;
        if (in[p] == HEADERS_VERSION_WITH_TRACE) {
            trace = getString(in, p + 1, end);
            p += 4 + getInt(in, p + 1);
            if (!StoredResponse.validTraceparent(trace)) {
                throw malformed("bad traceparent in the header block");
            }
            String r = getString(in, p + 1, end);
            p += 4 + getInt(in, p + 1);
            reason = r.isEmpty() ? null : r;
            if (end - p < 5 || (reason != null && !StoredResponse.validReason(reason))) {
                throw malformed("bad reason phrase in the header block");
            }
        } else if (in[p] == HEADERS_VERSION_WITH_REASON) {
            reason = getString(in, p + 1, end);
            p += 4 + getInt(in, p + 1);
            if (end - p < 5 || !StoredResponse.validReason(reason)) {
                throw malformed("bad reason phrase in the header block");
            }
        } else if (in[p] != HEADERS_VERSION) {
            throw malformed("unknown header block version " + in[p]);
        }
        int count = getInt(in, p + 1);
        p += 5;
        if (count < 0 || count > (end - p) / 8) {
            throw malformed("bad header count " + count);
        }
        Map<String, List<String>> headers = new LinkedHashMap<>();
        for (int i = 0; i < count; i++) {
            String name = getString(in, p, end);
            p += 4 + getInt(in, p);
            if (end - p < 4) {
                throw malformed("the header block ends inside header " + name);
            }
            int n = getInt(in, p);
            p += 4;
            if (n < 0 || n > (end - p) / 4) {
                throw malformed("bad value count " + n + " of header " + name);
            }
            String[] values = new String[n];
            for (int j = 0; j < n; j++) {
                values[j] = getString(in, p, end);
                p += 4 + getInt(in, p);
            }
            headers.put(name, List.of(values)); // kept as it is by StoredResponse's copy
        }
        if (p != end) {
            throw malformed((end - p) + " bytes are left over in the header block");
        }
        return new StoredResponse(status, headers, Arrays.copyOfRange(in, end, in.length), omitted == 1, reason, trace);
    }

    /**
     * The status of an encoded response, read from its first bytes only: a store that fetches the
     * head of a record to inspect it needs neither its headers nor its body.
     *
     * @param in     at least the response's first 7 bytes from {@code offset}
     * @param offset where the encoded response starts
     * @return the status, as encoded (not checked against 100-599: {@link #decode} does that)
     * @throws IllegalArgumentException when fewer than 7 bytes follow {@code offset}
     */
    public static int status(byte[] in, int offset) {
        checkFixed(in, offset);
        return getShort(in, offset);
    }

    /**
     * The length of an encoded response's body, read from its first bytes only (see {@link #status}).
     *
     * @param in      at least the response's first 7 bytes from {@code offset}
     * @param offset  where the encoded response starts
     * @param encoded the length of the whole encoded response, of which {@code in} may hold only the head
     * @return the body's length in bytes, or {@code -1} when the body was omitted
     * @throws IllegalArgumentException when fewer than 7 bytes follow {@code offset}, or the header
     *                                  block's length does not fit in {@code encoded}
     */
    public static long bodyLength(byte[] in, int offset, long encoded) {
        checkFixed(in, offset);
        if (in[offset + 2] == 1) {
            return -1;
        }
        int block = getInt(in, offset + 3);
        long body = encoded - FIXED - block;
        if (block < 5 || body < 0) {
            throw malformed("the header block's length is " + block + " where " + (encoded - FIXED) + " bytes follow");
        }
        return body;
    }

    private static void checkFixed(byte[] in, int offset) {
        if (offset < 0 || in.length - offset < FIXED) {
            throw malformed("it is " + (in.length - offset) + " bytes long, at least " + FIXED + " needed");
        }
    }

    private static IllegalArgumentException malformed(String what) {
        return new IllegalArgumentException("not a stored response: " + what);
    }

    /** @return the string at {@code p} (its length, then its UTF-8 bytes), which must end by {@code end} */
    private static String getString(byte[] in, int p, int end) {
        if (end - p < 4) {
            throw malformed("the header block ends inside a string's length");
        }
        int length = getInt(in, p);
        if (length < 0 || length > end - p - 4) {
            throw malformed("a string of " + length + " bytes where " + (end - p - 4) + " are left in the header block");
        }
        return new String(in, p + 4, length, StandardCharsets.UTF_8);
    }

    /** @return the length of {@code s} in UTF-8 */
    private static int utf8Length(String s) {
        return isAscii(s) ? s.length() : s.getBytes(StandardCharsets.UTF_8).length;
    }

    private static boolean isAscii(String s) {
        for (int i = 0; i < s.length(); i++) {
            if (s.charAt(i) >= 0x80) {
                return false;
            }
        }
        return true;
    }

    private static int putShort(byte[] out, int p, int v) {
        out[p] = (byte) (v >>> 8);
        out[p + 1] = (byte) v;
        return p + 2;
    }

    private static int putInt(byte[] out, int p, int v) {
        out[p] = (byte) (v >>> 24);
        out[p + 1] = (byte) (v >>> 16);
        out[p + 2] = (byte) (v >>> 8);
        out[p + 3] = (byte) v;
        return p + 4;
    }

    /**
     * Writes {@code s} as its UTF-8 length and bytes, exactly what {@code getBytes(UTF_8)} gives:
     * written as it is read while it is ASCII, and written again from its encoding at the first
     * character that is not (the space was sized by {@link #utf8Length}, so both fit).
     */
    private static int putString(byte[] out, int p, String s) {
        int length = s.length();
        for (int i = 0; i < length; i++) {
            char c = s.charAt(i);
            if (c >= 0x80) {
                byte[] bytes = s.getBytes(StandardCharsets.UTF_8);
                putInt(out, p, bytes.length);
                System.arraycopy(bytes, 0, out, p + 4, bytes.length);
                return p + 4 + bytes.length;
            }
            out[p + 4 + i] = (byte) c;
        }
        putInt(out, p, length);
        return p + 4 + length;
    }

    private static int getShort(byte[] in, int p) {
        return ((in[p] & 0xFF) << 8) | (in[p + 1] & 0xFF);
    }

    private static int getInt(byte[] in, int p) {
        return ((in[p] & 0xFF) << 24) | ((in[p + 1] & 0xFF) << 16) | ((in[p + 2] & 0xFF) << 8) | (in[p + 3] & 0xFF);
    }
}
