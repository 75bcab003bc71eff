package dev.idempotency.store.redis;

import java.io.ByteArrayOutputStream;
import java.io.DataInputStream;
import java.io.DataOutputStream;
import java.io.EOFException;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * The binary form of a stored response's headers (see {@link RedisIdempotencyStore} for the
 * layout): version byte {@code 1}, then a big-endian int header count, and per header the name
 * and the number of values followed by the values, each string as a big-endian int byte length
 * and its UTF-8 bytes. Order of headers and of values is kept.
 */
final class ResponseEncoding {

    static final int VERSION = 1;

    private ResponseEncoding() {
    }

    static byte[] encodeHeaders(Map<String, List<String>> headers) {
        ByteArrayOutputStream bytes = new ByteArrayOutputStream(64);
        try (DataOutputStream out = new DataOutputStream(bytes)) {
            out.writeByte(VERSION);
            out.writeInt(headers.size());
            for (Map.Entry<String, List<String>> h : headers.entrySet()) {
                writeString(out, h.getKey());
                out.writeInt(h.getValue().size());
                for (String v : h.getValue()) {
                    writeString(out, v);
                }
            }
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
        return bytes.toByteArray();
    }

    static Map<String, List<String>> decodeHeaders(byte[] encoded) throws IOException {
        DataInputStream in = new DataInputStream(new java.io.ByteArrayInputStream(encoded));
        int version = in.readUnsignedByte();
        if (version != VERSION) {
            throw new IOException("unknown header encoding version " + version);
        }
        int count = in.readInt();
        if (count < 0 || count > encoded.length) {
            throw new IOException("bad header count " + count);
        }
        Map<String, List<String>> headers = new LinkedHashMap<>();
        for (int i = 0; i < count; i++) {
            String name = readString(in, encoded.length);
            int values = in.readInt();
            if (values < 0 || values > encoded.length) {
                throw new IOException("bad value count " + values);
            }
            List<String> list = new ArrayList<>(values);
            for (int j = 0; j < values; j++) {
                list.add(readString(in, encoded.length));
            }
            headers.put(name, list);
        }
        if (in.read() != -1) {
            throw new IOException("trailing bytes after headers");
        }
        return headers;
    }

    private static void writeString(DataOutputStream out, String s) throws IOException {
        byte[] b = s.getBytes(StandardCharsets.UTF_8);
        out.writeInt(b.length);
        out.write(b);
    }

    private static String readString(DataInputStream in, int max) throws IOException {
        int len = in.readInt();
        if (len < 0 || len > max) {
            throw new IOException("bad string length " + len);
        }
        byte[] b = new byte[len];
        try {
            in.readFully(b);
        } catch (EOFException e) {
            throw new IOException("truncated headers", e);
        }
        return new String(b, StandardCharsets.UTF_8);
    }
}
