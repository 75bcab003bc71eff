package dev.idempotency.server;

import com.fasterxml.jackson.core.JsonFactory;
import com.fasterxml.jackson.core.JsonParser;
import com.fasterxml.jackson.core.JsonToken;
import org.erdtman.jcs.NumberToJSON;

import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Collection;
import java.util.Comparator;
import java.util.List;

/**
 * RFC 8785 (JCS) canonical form of a JSON text, written straight into a digest.
 *
 * <p>The text is read into a small tree: objects as member lists sorted by name in
 * {@link String#compareTo} order, which is the UTF-16 code-unit order JCS asks for; numbers as
 * their canonical spelling, from the IEEE-754 double they denote, in the ECMAScript form, so
 * {@code 1.0}, {@code 1} and {@code 1e0} are one number (integers of at most 2^53 take a fast
 * path; the rest go through the ECMAScript formatter). Duplicate member names, trailing
 * content, numbers beyond double range and anything else that is not I-JSON make
 * {@link #canonicalize} fail, and the caller falls back to the raw bytes.
 */
final class JsonCanonicalizer {

    private static final JsonFactory FACTORY = JsonFactory.builder().build();
    private static final Object NULL = new Object();
    private static final long MAX_EXACT = 1L << 53;
    private static final Comparator<Member> BY_NAME = Comparator.comparing(Member::name);
    /**
     * The most values (objects, arrays, members' values, scalars) a body may hold to be
     * canonicalized; a larger one is fingerprinted as raw bytes. Bounds the tree to a few MB
     * whatever the body (a 1 MiB {@code [0,0,...]} holds half a million values).
     */
    static final int MAX_VALUES = 1 << 17;
    private static final int SMALL_INTS = 1024;
    private static final JsonNumber[] SMALL = new JsonNumber[2 * SMALL_INTS + 1];

    static {
        for (int i = -SMALL_INTS; i <= SMALL_INTS; i++) {
            SMALL[i + SMALL_INTS] = new JsonNumber(Integer.toString(i));
        }
    }

    private JsonCanonicalizer() {
    }

    /** Thrown when the input is not JSON that JCS can canonicalize. */
    static final class NotCanonicalizableException extends Exception {
        NotCanonicalizableException(String message, Throwable cause) {
            super(message, cause, false, false);
        }
    }

    /** One object member; {@code value} is a tree node. */
    private record Member(String name, Object value) {
    }

    /** A number already in its canonical spelling. */
    private record JsonNumber(String canonical) {
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

    /** The canonical text of {@code json}; for tests and tools. */
    static String canonicalString(byte[] json) throws NotCanonicalizableException {
        Object root = parse(json, json.length);
        ByteArrayOutputStream bytes = new ByteArrayOutputStream();
        DigestSink capture = new DigestSink() {
            @Override
            void drain(byte[] b, int off, int len) {
                bytes.write(b, off, len);
            }
        };
        write(root, capture);
        capture.finish();
        return bytes.toString(StandardCharsets.UTF_8);
    }

    private static Object parse(byte[] json, int length) throws NotCanonicalizableException {
        try (JsonParser p = FACTORY.createParser(json, 0, length)) {
            JsonToken t = p.nextToken();
            if (t == null) {
                throw new NotCanonicalizableException("empty JSON text", null);
            }
            Object root = readValue(p, t, new int[1]);
            if (p.nextToken() != null) {
                throw new NotCanonicalizableException("content after the JSON value", null);
            }
            return root;
        } catch (IOException | RuntimeException e) {
            throw new NotCanonicalizableException("not canonicalizable JSON", e);
        }
    }

    private static Object readValue(JsonParser p, JsonToken t, int[] values)
        throws IOException, NotCanonicalizableException {
        if (++values[0] > MAX_VALUES) {
            throw new NotCanonicalizableException("more than " + MAX_VALUES + " values", null);
        }
        switch (t) {
            case START_OBJECT: {
                List<Member> members = new ArrayList<>();
                JsonToken n;
                while ((n = p.nextToken()) == JsonToken.FIELD_NAME) {
                    String name = p.currentName();
                    members.add(new Member(name, readValue(p, p.nextToken(), values)));
                }
                if (n != JsonToken.END_OBJECT) {
                    throw new NotCanonicalizableException("unterminated object", null);
                }
                members.sort(BY_NAME);
                for (int i = 1; i < members.size(); i++) {
                    if (members.get(i).name().equals(members.get(i - 1).name())) {
                        throw new NotCanonicalizableException("duplicate member name", null);
                    }
                }
                return members;
            }
            case START_ARRAY: {
                List<Object> list = new ArrayList<>();
                JsonToken n;
                while ((n = p.nextToken()) != JsonToken.END_ARRAY) {
                    if (n == null) {
                        throw new NotCanonicalizableException("unterminated array", null);
                    }
                    list.add(readValue(p, n, values));
                }
                return new JsonArray(list);
            }
            case VALUE_STRING:
                return p.getText();
            case VALUE_NUMBER_INT:
                if (p.getNumberType() != JsonParser.NumberType.BIG_INTEGER) {
                    long v = p.getLongValue();
                    if (v >= -SMALL_INTS && v <= SMALL_INTS) {
                        return SMALL[(int) v + SMALL_INTS];
                    }
                    if (v >= -MAX_EXACT && v <= MAX_EXACT) {
                        return new JsonNumber(Long.toString(v));
                    }
                }
                return number(p.getDoubleValue());
            case VALUE_NUMBER_FLOAT:
                return number(p.getDoubleValue());
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

    private static JsonNumber number(double d) throws IOException, NotCanonicalizableException {
        if (Double.isNaN(d) || Double.isInfinite(d)) {
            throw new NotCanonicalizableException("number outside IEEE-754 double range", null);
        }
        if (d == Math.rint(d) && Math.abs(d) <= MAX_EXACT) {
            // an integral double up to 2^53 prints as its integer digits in ECMAScript; -0 as 0
            return new JsonNumber(Long.toString((long) d));
        }
        return new JsonNumber(NumberToJSON.serializeNumber(d));
    }

    /** An array node, told apart from an object's member list. */
    private record JsonArray(List<Object> items) {
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
            if (node instanceof JsonArray array) {
                int index = arrayIndex(token);
                if (index < 0 || index >= array.items().size()) {
                    return;
                }
                if (last) {
                    array.items().remove(index);
                    return;
                }
                node = array.items().get(index);
            } else if (node instanceof List<?> members) {
                Member found = null;
                for (Member m : (List<Member>) members) {
                    if (m.name().equals(token)) {
                        found = m;
                        break;
                    }
                }
                if (found == null) {
                    return;
                }
                if (last) {
                    members.remove(found);
                    return;
                }
                node = found.value();
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

    @SuppressWarnings("unchecked")
    private static void write(Object node, DigestSink out) {
        if (node instanceof String s) {
            out.writeJsonString(s);
        } else if (node instanceof JsonNumber n) {
            out.writeUtf8(n.canonical());
        } else if (node instanceof JsonArray array) {
            out.write('[');
            List<Object> items = array.items();
            for (int i = 0; i < items.size(); i++) {
                if (i > 0) {
                    out.write(',');
                }
                write(items.get(i), out);
            }
            out.write(']');
        } else if (node instanceof List<?> members) {
            out.write('{');
            boolean first = true;
            for (Member m : (List<Member>) members) {
                if (!first) {
                    out.write(',');
                }
                first = false;
                out.writeJsonString(m.name());
                out.write(':');
                write(m.value(), out);
            }
            out.write('}');
        } else if (node instanceof Boolean b) {
            out.writeUtf8(b ? "true" : "false");
        } else {
            out.writeUtf8("null");
        }
    }
}
