package dev.idempotency.server.store;

import java.nio.charset.StandardCharsets;
import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * A {@link StoredResponse} as one byte array, for the in-memory store, so a kept record is a
 * handful of objects instead of a map of lists of strings: status (2 bytes, big-endian), the
 * omitted flag (1 byte), the header count (4 bytes), per header its name, its value count
 * (4 bytes) and its values (each string as a 4-byte length and its UTF-8 bytes), then the body
 * to the end. Header and value order are kept.
 */
final class StoredResponseCodec {

    private static final byte[] NO_PREFIX = new byte[0];

    private StoredResponseCodec() {
    }

    static byte[] encode(StoredResponse response) {
        return encode(NO_PREFIX, 0, response);
    }

    /** @return the first {@code prefixLength} bytes of {@code prefix}, then {@code response} encoded, in one array */
    static byte[] encode(byte[] prefix, int prefixLength, StoredResponse response) {
        Map<String, List<String>> headers = response.headers();
        // sized first and written straight into the array: an ASCII string (headers almost
        // always are) costs no array of its own
        int size = prefixLength + 7;
        for (Map.Entry<String, List<String>> h : headers.entrySet()) {
            size += 8 + utf8Length(h.getKey());
            for (String v : h.getValue()) {
                size += 4 + utf8Length(v);
            }
        }
        byte[] out = new byte[size + response.bodyLength()];
        System.arraycopy(prefix, 0, out, 0, prefixLength);
        int p = putShort(out, prefixLength, response.status());
        out[p++] = (byte) (response.bodyOmitted() ? 1 : 0);
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

    /** @return the response encoded in {@code in} from {@code offset} to its end */
    static StoredResponse decode(byte[] in, int offset) {
        int status = getShort(in, offset);
        boolean omitted = in[offset + 2] != 0;
        int count = getInt(in, offset + 3);
        int p = offset + 7;
        Map<String, List<String>> headers = new LinkedHashMap<>();
        for (int i = 0; i < count; i++) {
            int nameLength = getInt(in, p);
            String name = new String(in, p + 4, nameLength, StandardCharsets.UTF_8);
            p += 4 + nameLength;
            String[] values = new String[getInt(in, p)];
            p += 4;
            for (int j = 0; j < values.length; j++) {
                int length = getInt(in, p);
                values[j] = new String(in, p + 4, length, StandardCharsets.UTF_8);
                p += 4 + length;
            }
            headers.put(name, List.of(values)); // kept as it is by StoredResponse's copy
        }
        return new StoredResponse(status, headers, Arrays.copyOfRange(in, p, in.length), omitted);
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
