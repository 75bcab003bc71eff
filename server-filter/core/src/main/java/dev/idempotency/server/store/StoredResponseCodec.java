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
        int size = prefixLength + 7;
        byte[][] strings = new byte[count(headers)][];
        int s = 0;
        for (Map.Entry<String, List<String>> h : headers.entrySet()) {
            strings[s] = h.getKey().getBytes(StandardCharsets.UTF_8);
            size += 8 + strings[s++].length;
            for (String v : h.getValue()) {
                strings[s] = v.getBytes(StandardCharsets.UTF_8);
                size += 4 + strings[s++].length;
            }
        }
        byte[] out = new byte[size + response.bodyLength()];
        System.arraycopy(prefix, 0, out, 0, prefixLength);
        int p = putShort(out, prefixLength, response.status());
        out[p++] = (byte) (response.bodyOmitted() ? 1 : 0);
        p = putInt(out, p, headers.size());
        s = 0;
        for (Map.Entry<String, List<String>> h : headers.entrySet()) {
            p = putString(out, p, strings[s++]);
            p = putInt(out, p, h.getValue().size());
            for (int i = 0; i < h.getValue().size(); i++) {
                p = putString(out, p, strings[s++]);
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
            headers.put(name, Arrays.asList(values));
        }
        return new StoredResponse(status, headers, Arrays.copyOfRange(in, p, in.length), omitted);
    }

    private static int count(Map<String, List<String>> headers) {
        int n = headers.size();
        for (List<String> values : headers.values()) {
            n += values.size();
        }
        return n;
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

    private static int putString(byte[] out, int p, byte[] s) {
        putInt(out, p, s.length);
        System.arraycopy(s, 0, out, p + 4, s.length);
        return p + 4 + s.length;
    }

    private static int getShort(byte[] in, int p) {
        return ((in[p] & 0xFF) << 8) | (in[p + 1] & 0xFF);
    }

    private static int getInt(byte[] in, int p) {
        return ((in[p] & 0xFF) << 24) | ((in[p + 1] & 0xFF) << 16) | ((in[p + 2] & 0xFF) << 8) | (in[p + 3] & 0xFF);
    }
}
