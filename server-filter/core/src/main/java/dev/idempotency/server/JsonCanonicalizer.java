package dev.idempotency.server;

import com.fasterxml.jackson.core.JsonFactory;
import com.fasterxml.jackson.core.JsonParser;
import com.fasterxml.jackson.core.JsonToken;
import org.erdtman.jcs.NumberToJSON;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Collection;
import java.util.HashMap;
import java.util.List;
import java.util.Map;

/**
 * RFC 8785 (JCS) canonical form of a JSON text, written while the text is parsed, without a
 * tree.
 *
 * <p>One pass of Jackson's streaming parser writes every value in canonical spelling straight
 * into a {@link CanonicalBuffer}: strings re-escaped from the parser's characters (no
 * {@code String} per value), numbers re-spelled from their text. Each object's members are
 * written in input order while their name and byte range are noted; when the object ends out
 * of order, only its own bytes are rearranged into the UTF-16 code-unit order JCS asks for
 * ({@link String#compareTo}). Already-sorted objects, the common case, are never copied.
 *
 * <p>Numbers: a number with at most 15 significant digits, well inside the normal double range,
 * is spelled from its own digits: for such a decimal the double it denotes has exactly those
 * digits as its shortest round-trip form (15 digits always round-trip), so its ECMAScript
 * spelling follows from the digits and the exponent alone ({@code 1.0}, {@code 1} and
 * {@code 1e0} are all {@code 1}; {@code 1e21} is {@code 1e+21}). Longer or extreme numbers go
 * through the IEEE-754 double and the ECMAScript formatter.
 *
 * <p>Duplicate member names, trailing content, numbers beyond double range, nesting deeper than
 * Jackson's limit (1000) and anything else that is not I-JSON make {@link #canonicalize} fail,
 * and the caller falls back to the raw bytes.
 */
final class JsonCanonicalizer {

    private static final JsonFactory FACTORY = JsonFactory.builder().build();
    private static final long MAX_EXACT = 1L << 53;
    /** Most significant digits taken verbatim: every decimal of this many digits round-trips through a double. */
    private static final int EXACT_DIGITS = 15;

    private JsonCanonicalizer() {
    }

    /** Thrown when the input is not JSON that JCS can canonicalize. */
    static final class NotCanonicalizableException extends Exception {
        NotCanonicalizableException(String message, Throwable cause) {
            super(message, cause, false, false);
        }
    }

    /**
     * Members and array elements left out of the canonical form, compiled from JSON Pointers
     * (RFC 6901) into a tree of pointer tokens. Immutable.
     */
    static final class Pointers {
        static final Pointers NONE = new Pointers(null, false);

        /** Children by token; {@code null} for none. */
        private final Node root;
        /** The empty pointer: the whole document is ignored. */
        private final boolean whole;

        private Pointers(Node root, boolean whole) {
            this.root = root;
            this.whole = whole;
        }

        /**
         * @param pointers JSON Pointers; ones that are not pointers (no leading {@code /}) are
         *                 ignored here, configuration validation reports them
         */
        static Pointers compile(Collection<String> pointers) {
            if (pointers.isEmpty()) {
                return NONE;
            }
            Node root = new Node();
            boolean whole = false;
            for (String pointer : pointers) {
                if (pointer.isEmpty()) {
                    whole = true;
                    continue;
                }
                if (pointer.charAt(0) != '/') {
                    continue;
                }
                Node node = root;
                for (String raw : pointer.substring(1).split("/", -1)) {
                    node = node.child(raw.replace("~1", "/").replace("~0", "~"), true);
                }
                node.removed = true;
            }
            root.freeze();
            return new Pointers(root, whole);
        }
    }

    /** A pointer token's node: removed here, or a path to removed members below. */
    private static final class Node {
        private Map<String, Node> children = new HashMap<>();
        /** Children whose token is an array index, by index. */
        private Node[] byIndex = new Node[0];
        private boolean removed;

        Node child(String token, boolean create) {
            Node n = children.get(token);
            if (n == null && create) {
                n = new Node();
                children.put(token, n);
            }
            return n;
        }

        Node child(int index) {
            return index < byIndex.length ? byIndex[index] : null;
        }

        void freeze() {
            List<Node> indexed = new ArrayList<>();
            children.forEach((token, node) -> {
                int i = arrayIndex(token);
                if (i >= 0) {
                    while (indexed.size() <= i) {
                        indexed.add(null);
                    }
                    indexed.set(i, node);
                }
                node.freeze();
            });
            byIndex = indexed.toArray(new Node[0]);
            children = Map.copyOf(children);
        }
    }

    /**
     * Parses {@code json[0, length)}, leaves out what {@code ignored} names, and appends the
     * canonical UTF-8 form to {@code out}. When it fails, {@code out} is as it was.
     */
    static void canonicalize(byte[] json, int length, Pointers ignored, CanonicalBuffer out)
        throws NotCanonicalizableException {
        int start = out.length();
        try (JsonParser p = FACTORY.createParser(json, 0, length)) {
            JsonToken t = p.nextToken();
            if (t == null) {
                throw new NotCanonicalizableException("empty JSON text", null);
            }
            new Writer(p, out).value(t, ignored.root, 0);
            if (p.nextToken() != null) {
                throw new NotCanonicalizableException("content after the JSON value", null);
            }
        } catch (NotCanonicalizableException e) {
            out.truncate(start);
            throw e;
        } catch (IOException | RuntimeException | StackOverflowError e) {
            out.truncate(start);
            throw new NotCanonicalizableException("not canonicalizable JSON", e);
        }
        if (ignored.whole) {
            out.truncate(start);
            out.ascii("null");
        }
    }

    /** The canonical text of {@code json}; for tests and tools. */
    static String canonicalString(byte[] json) throws NotCanonicalizableException {
        CanonicalBuffer out = new CanonicalBuffer();
        canonicalize(json, json.length, Pointers.NONE, out);
        return new String(out.bytes, 0, out.length, StandardCharsets.UTF_8);
    }

    /** One canonicalization: the parser, the output and the members of the objects being written, by depth. */
    private static final class Writer {
        private final JsonParser p;
        private final CanonicalBuffer out;
        private Members[] members = new Members[8];

        Writer(JsonParser p, CanonicalBuffer out) {
            this.p = p;
            this.out = out;
        }

        void value(JsonToken t, Node node, int depth) throws IOException, NotCanonicalizableException {
            switch (t) {
                case START_OBJECT -> object(node, depth);
                case START_ARRAY -> array(node, depth);
                case VALUE_STRING -> out.jsonString(p.getTextCharacters(), p.getTextOffset(), p.getTextLength());
                case VALUE_NUMBER_INT, VALUE_NUMBER_FLOAT -> number();
                case VALUE_TRUE -> out.ascii("true");
                case VALUE_FALSE -> out.ascii("false");
                case VALUE_NULL -> out.ascii("null");
                default -> throw new NotCanonicalizableException("unexpected token " + t, null);
            }
        }

        private void object(Node node, int depth) throws IOException, NotCanonicalizableException {
            out.write('{');
            Members m = members(depth);
            boolean sorted = true;
            String previous = null;
            JsonToken t;
            while ((t = p.nextToken()) == JsonToken.FIELD_NAME) {
                String name = p.currentName();
                JsonToken v = p.nextToken();
                Node child = node == null ? null : node.child(name, false);
                if (child != null && child.removed) {
                    p.skipChildren();
                    continue;
                }
                if (previous != null) {
                    int order = previous.compareTo(name);
                    if (order == 0) {
                        throw new NotCanonicalizableException("duplicate member name", null);
                    }
                    sorted &= order < 0;
                    out.write(',');
                }
                int start = out.length();
                out.jsonString(name);
                out.write(':');
                value(v, child, depth + 1);
                m.add(name, start, out.length());
                previous = name;
            }
            if (t != JsonToken.END_OBJECT) {
                throw new NotCanonicalizableException("unterminated object", null);
            }
            if (!sorted) {
                m.reorder(out);
            }
            m.count = 0;
            out.write('}');
        }

        private void array(Node node, int depth) throws IOException, NotCanonicalizableException {
            out.write('[');
            int index = 0;
            boolean first = true;
            JsonToken t;
            while ((t = p.nextToken()) != JsonToken.END_ARRAY) {
                if (t == null) {
                    throw new NotCanonicalizableException("unterminated array", null);
                }
                Node child = node == null ? null : node.child(index);
                index++;
                if (child != null && child.removed) {
                    p.skipChildren();
                    continue;
                }
                if (!first) {
                    out.write(',');
                }
                first = false;
                value(t, child, depth + 1);
            }
            out.write(']');
        }

        private Members members(int depth) {
            if (depth >= members.length) {
                members = Arrays.copyOf(members, Math.max(depth + 1, members.length * 2));
            }
            Members m = members[depth];
            if (m == null) {
                m = new Members();
                members[depth] = m;
            }
            return m;
        }

        /**
         * Spells the current number token canonically, from its text where that is exact (see the
         * class comment), else through its double value.
         */
        private void number() throws IOException, NotCanonicalizableException {
            char[] text = p.getTextCharacters();
            int i = p.getTextOffset();
            int end = i + p.getTextLength();
            boolean negative = text[i] == '-';
            if (negative) {
                i++;
            }
            char[] d = out.digits;
            if (d.length < end - i) {
                d = new char[end - i];
                out.digits = d;
            }
            int k = 0;
            int intDigits = 0;
            while (i < end && text[i] >= '0' && text[i] <= '9') {
                d[k++] = text[i++];
                intDigits++;
            }
            if (i < end && text[i] == '.') {
                i++;
                while (i < end && text[i] >= '0' && text[i] <= '9') {
                    d[k++] = text[i++];
                }
            }
            long exponent = 0;
            if (i < end && (text[i] == 'e' || text[i] == 'E')) {
                i++;
                boolean negativeExponent = false;
                if (i < end && (text[i] == '+' || text[i] == '-')) {
                    negativeExponent = text[i] == '-';
                    i++;
                }
                while (i < end && text[i] >= '0' && text[i] <= '9') {
                    if (exponent < 100_000) {
                        exponent = exponent * 10 + (text[i] - '0');
                    }
                    i++;
                }
                if (negativeExponent) {
                    exponent = -exponent;
                }
            }
            int lead = 0;
            while (lead < k && d[lead] == '0') {
                lead++;
            }
            if (lead == k) {
                out.write('0'); // any zero, -0 included
                return;
            }
            int last = k;
            while (d[last - 1] == '0') {
                last--;
            }
            // the value is 0.d[lead, last) x 10^n
            long n = intDigits - lead + exponent;
            int digits = last - lead;
            if (digits > EXACT_DIGITS || n > 308 || n < -306) {
                viaDouble(p.getDoubleValue());
                return;
            }
            if (negative) {
                out.write('-');
            }
            spell(d, lead, digits, (int) n);
        }

        /** ECMAScript Number::toString of 0.d[from, from + k) x 10^n. */
        private void spell(char[] d, int from, int k, int n) {
            if (k <= n && n <= 21) {
                out.ascii(d, from, k);
                for (int z = k; z < n; z++) {
                    out.write('0');
                }
            } else if (0 < n && n <= 21) {
                out.ascii(d, from, n);
                out.write('.');
                out.ascii(d, from + n, k - n);
            } else if (-6 < n && n <= 0) {
                out.write('0');
                out.write('.');
                for (int z = n; z < 0; z++) {
                    out.write('0');
                }
                out.ascii(d, from, k);
            } else {
                out.write(d[from]);
                if (k > 1) {
                    out.write('.');
                    out.ascii(d, from + 1, k - 1);
                }
                out.write('e');
                int e = n - 1;
                out.write(e < 0 ? '-' : '+');
                out.ascii(Integer.toString(Math.abs(e)));
            }
        }

        private void viaDouble(double v) throws NotCanonicalizableException, IOException {
            if (Double.isNaN(v) || Double.isInfinite(v)) {
                throw new NotCanonicalizableException("number outside IEEE-754 double range", null);
            }
            if (v == Math.rint(v) && Math.abs(v) <= MAX_EXACT) {
                // an integral double up to 2^53 prints as its integer digits in ECMAScript; -0 as 0
                out.ascii(Long.toString((long) v));
            } else {
                out.ascii(NumberToJSON.serializeNumber(v));
            }
        }
    }

    /** The members of one object as written: names and the byte range of each {@code "name":value}. */
    private static final class Members {
        String[] names = new String[8];
        int[] starts = new int[8];
        int[] ends = new int[8];
        int count;
        private int[] order = new int[8];

        void add(String name, int start, int end) {
            if (count == names.length) {
                names = Arrays.copyOf(names, count * 2);
                starts = Arrays.copyOf(starts, count * 2);
                ends = Arrays.copyOf(ends, count * 2);
            }
            names[count] = name;
            starts[count] = start;
            ends[count] = end;
            count++;
        }

        /** Rewrites the members, which end at {@code out}'s end, in name order; fails on a duplicate name. */
        void reorder(CanonicalBuffer out) throws NotCanonicalizableException {
            if (order.length < count) {
                order = new int[names.length];
            }
            for (int i = 0; i < count; i++) {
                order[i] = i;
            }
            sort();
            for (int i = 1; i < count; i++) {
                if (names[order[i - 1]].equals(names[order[i]])) {
                    throw new NotCanonicalizableException("duplicate member name", null);
                }
            }
            int from = starts[0];
            byte[] copy = out.copyToScratch(from);
            out.truncate(from);
            for (int i = 0; i < count; i++) {
                int m = order[i];
                if (i > 0) {
                    out.write(',');
                }
                out.write(copy, starts[m] - from, ends[m] - starts[m]);
            }
        }

        private void sort() {
            if (count <= 32) {
                for (int i = 1; i < count; i++) {
                    int m = order[i];
                    int j = i - 1;
                    while (j >= 0 && names[order[j]].compareTo(names[m]) > 0) {
                        order[j + 1] = order[j];
                        j--;
                    }
                    order[j + 1] = m;
                }
                return;
            }
            Integer[] boxed = new Integer[count];
            for (int i = 0; i < count; i++) {
                boxed[i] = i;
            }
            Arrays.sort(boxed, (a, b) -> names[a].compareTo(names[b]));
            for (int i = 0; i < count; i++) {
                order[i] = boxed[i];
            }
        }
    }

    /** @return the index a pointer token denotes in an array, or -1 when it is not an index */
    static int arrayIndex(String token) {
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
}
