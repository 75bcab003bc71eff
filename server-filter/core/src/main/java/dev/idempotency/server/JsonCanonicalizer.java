package dev.idempotency.server;

import com.fasterxml.jackson.core.JsonFactory;
import com.fasterxml.jackson.core.JsonParser;
import com.fasterxml.jackson.core.JsonToken;
import org.erdtman.jcs.NumberToJSON;

import java.io.IOException;
import java.util.ArrayList;
import java.util.Collection;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;

/**
 * RFC 8785 (JCS) canonical form of a JSON text, written straight into a digest.
 *
 * <p>Objects are read into {@link TreeMap}s, whose natural {@link String} order is the UTF-16
 * code-unit order JCS asks for; numbers are read as IEEE-754 doubles and written in the
 * ECMAScript form, so {@code 1.0}, {@code 1} and {@code 1e0} are one number. Duplicate member
 * names, trailing content, numbers beyond double range and anything else that is not I-JSON
 * make {@link #canonicalize} fail, and the caller falls back to the raw bytes.
 */
final class JsonCanonicalizer {

    private static final JsonFactory FACTORY = JsonFactory.builder().build();
    private static final Object NULL = new Object();
    private static final char[] HEX = "0123456789abcdef".toCharArray();

    private JsonCanonicalizer() {
    }

    /** Thrown when the input is not JSON that JCS can canonicalize. */
    static final class NotCanonicalizableException extends Exception {
        NotCanonicalizableException(String message, Throwable cause) {
            super(message, cause, false, false);
        }
    }

    /**
     * Parses {@code json}, removes the members named by {@code ignoredPointers} (RFC 6901) and
     * writes the canonical UTF-8 form into {@code sink}. Nothing is written when it fails.
     */
    static void canonicalize(byte[] json, int length, Collection<String> ignoredPointers, DigestSink sink)
        throws NotCanonicalizableException {
        Object root = parse(json, length);
        for (String pointer : ignoredPointers) {
            if (pointer.isEmpty()) {
                root = NULL;
            } else {
                remove(root, pointer);
            }
        }
        write(root, sink);
    }

    /** Canonical UTF-8 bytes of {@code json}; for tests and tools. */
    static String canonicalString(byte[] json) throws NotCanonicalizableException {
        Object root = parse(json, json.length);
        StringBuilder sb = new StringBuilder();
        toString(root, sb);
        return sb.toString();
    }

    private static Object parse(byte[] json, int length) throws NotCanonicalizableException {
        try (JsonParser p = FACTORY.createParser(json, 0, length)) {
            JsonToken t = p.nextToken();
            if (t == null) {
                throw new NotCanonicalizableException("empty JSON text", null);
            }
            Object root = readValue(p, t);
            if (p.nextToken() != null) {
                throw new NotCanonicalizableException("content after the JSON value", null);
            }
            return root;
        } catch (IOException | RuntimeException e) {
            throw new NotCanonicalizableException("not canonicalizable JSON", e);
        }
    }

    private static Object readValue(JsonParser p, JsonToken t) throws IOException, NotCanonicalizableException {
        switch (t) {
            case START_OBJECT: {
                TreeMap<String, Object> map = new TreeMap<>();
                JsonToken n;
                while ((n = p.nextToken()) == JsonToken.FIELD_NAME) {
                    String name = p.currentName();
                    Object value = readValue(p, p.nextToken());
                    if (map.put(name, value) != null) {
                        throw new NotCanonicalizableException("duplicate member name", null);
                    }
                }
                if (n != JsonToken.END_OBJECT) {
                    throw new NotCanonicalizableException("unterminated object", null);
                }
                return map;
            }
            case START_ARRAY: {
                List<Object> list = new ArrayList<>();
                JsonToken n;
                while ((n = p.nextToken()) != JsonToken.END_ARRAY) {
                    if (n == null) {
                        throw new NotCanonicalizableException("unterminated array", null);
                    }
                    list.add(readValue(p, n));
                }
                return list;
            }
            case VALUE_STRING:
                return p.getText();
            case VALUE_NUMBER_INT:
            case VALUE_NUMBER_FLOAT: {
                double d = p.getDoubleValue();
                if (Double.isNaN(d) || Double.isInfinite(d)) {
                    throw new NotCanonicalizableException("number outside IEEE-754 double range", null);
                }
                return new JsonNumber(NumberToJSON.serializeNumber(d));
            }
            case VALUE_TRUE:
                return Boolean.TRUE;
            case VALUE_FALSE:
                return Boolean.FALSE;
            case VALUE_NULL:
                return NULL;
            default:
                throw new NotCanonicalizableException("unexpected token " + t, null);
        }
    }

    /** A number already in its canonical spelling. */
    private record JsonNumber(String canonical) {
    }

    @SuppressWarnings("unchecked")
    private static void remove(Object root, String pointer) {
        if (pointer.charAt(0) != '/') {
            return; // not a JSON Pointer; configuration validation reports these
        }
        String[] tokens = pointer.substring(1).split("/", -1);
        Object node = root;
        for (int i = 0; i < tokens.length; i++) {
            String token = tokens[i].replace("~1", "/").replace("~0", "~");
            boolean last = i == tokens.length - 1;
            if (node instanceof TreeMap<?, ?> map) {
                if (last) {
                    map.remove(token);
                    return;
                }
                node = map.get(token);
            } else if (node instanceof List<?> list) {
                int index = arrayIndex(token);
                if (index < 0 || index >= list.size()) {
                    return;
                }
                if (last) {
                    ((List<Object>) list).remove(index);
                    return;
                }
                node = list.get(index);
            } else {
                return;
            }
        }
    }

    private static int arrayIndex(String token) {
        if (token.isEmpty() || token.length() > 9 || (token.length() > 1 && token.charAt(0) == '0')) {
            return -1;
        }
        for (int i = 0; i < token.length(); i++) {
            if (token.charAt(i) < '0' || token.charAt(i) > '9') {
                return -1;
            }
        }
        return Integer.parseInt(token);
    }

    private static void write(Object node, DigestSink out) {
        if (node instanceof Map<?, ?> map) {
            out.write('{');
            boolean first = true;
            for (Map.Entry<?, ?> e : map.entrySet()) {
                if (!first) {
                    out.write(',');
                }
                first = false;
                writeString((String) e.getKey(), out);
                out.write(':');
                write(e.getValue(), out);
            }
            out.write('}');
        } else if (node instanceof List<?> list) {
            out.write('[');
            for (int i = 0; i < list.size(); i++) {
                if (i > 0) {
                    out.write(',');
                }
                write(list.get(i), out);
            }
            out.write(']');
        } else if (node instanceof String s) {
            writeString(s, out);
        } else if (node instanceof JsonNumber n) {
            out.writeUtf8(n.canonical());
        } else if (node instanceof Boolean b) {
            out.writeUtf8(b ? "true" : "false");
        } else {
            out.writeUtf8("null");
        }
    }

    private static void writeString(String s, DigestSink out) {
        out.write('"');
        int n = s.length();
        int runStart = 0;
        for (int i = 0; i < n; i++) {
            char c = s.charAt(i);
            if (c < 0x20 || c == '"' || c == '\\' || c >= 0x80) {
                if (c >= 0x80) {
                    continue; // part of a run written as UTF-8 below
                }
                if (i > runStart) {
                    out.writeUtf8(s.substring(runStart, i));
                }
                out.write('\\');
                switch (c) {
                    case '"' -> out.write('"');
                    case '\\' -> out.write('\\');
                    case '\b' -> out.write('b');
                    case '\f' -> out.write('f');
                    case '\n' -> out.write('n');
                    case '\r' -> out.write('r');
                    case '\t' -> out.write('t');
                    default -> {
                        out.write('u');
                        out.write('0');
                        out.write('0');
                        out.write(HEX[c >> 4]);
                        out.write(HEX[c & 0xF]);
                    }
                }
                runStart = i + 1;
            }
        }
        if (runStart == 0) {
            out.writeUtf8(s);
        } else if (runStart < n) {
            out.writeUtf8(s.substring(runStart));
        }
        out.write('"');
    }

    private static void toString(Object node, StringBuilder sb) {
        // Used by tests only: the same rules as write(), into a String.
        DigestSinkCapture capture = new DigestSinkCapture();
        write(node, capture);
        sb.append(capture.text());
    }

    /** A sink that also records what passes through, for {@link #canonicalString}. */
    private static final class DigestSinkCapture extends DigestSink {
        private final java.io.ByteArrayOutputStream bytes = new java.io.ByteArrayOutputStream();

        @Override
        void write(int b) {
            bytes.write(b);
        }

        @Override
        void write(byte[] b, int off, int len) {
            bytes.write(b, off, len);
        }

        String text() {
            return bytes.toString(java.nio.charset.StandardCharsets.UTF_8);
        }
    }
}
