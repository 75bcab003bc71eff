package dev.idempotency.server.internal.fingerprint;

import io.micronaut.core.annotation.Internal;
import org.erdtman.jcs.NumberToJSON;

import java.lang.invoke.MethodHandles;
import java.lang.invoke.VarHandle;
import java.nio.ByteOrder;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Collection;
import java.util.HashMap;
import java.util.List;
import java.util.Map;

/**
 * RFC 8785 (JCS) canonical form of a JSON text, in one pass over its bytes, without a tree.
 *
 * <p>A strict RFC 8259 scanner reads the UTF-8 input and writes every value in canonical form
 * straight into a {@link CanonicalBuffer}, each input byte looked at once:
 * <ul>
 *   <li>a string that is plain ASCII without escapes (the common case) is already canonical and
 *       is copied as it is; otherwise escapes are decoded and the string written with JCS's
 *       minimal escaping ({@code \"}, {@code \\}, {@code \b \f \n \r \t}, other control characters
 *       as lower-case backslash-u-00xx escapes) and everything else as UTF-8; raw UTF-8 is validated and
 *       kept;</li>
 *   <li>a number with at most 15 significant digits, well inside the normal double range, is
 *       spelled from its own digits: for such a decimal the double it denotes has exactly those
 *       digits as its shortest round-trip form (15 digits always round-trip), so its ECMAScript
 *       spelling follows from the digits and the exponent alone ({@code 1.0}, {@code 1} and
 *       {@code 1e0} are all {@code 1}; {@code 1e21} is {@code 1e+21}); longer or extreme numbers
 *       go through the IEEE-754 double and the ECMAScript formatter;</li>
 *   <li>each object's members are written in input order while their byte ranges are noted; an
 *       object whose names are out of order has only its own bytes rearranged into the UTF-16
 *       code-unit order JCS asks for. Already-sorted objects are never copied.</li>
 * </ul>
 * Anything that is not I-JSON makes {@link #canonicalize} fail, and the caller falls back to the
 * raw bytes: malformed JSON, invalid UTF-8, duplicate member names, trailing content, numbers
 * beyond double range, nesting deeper than {@value #MAX_DEPTH}. A lone surrogate escape
 * (backslash-ud800) is accepted and written in its 3-byte form, which no valid text produces, so it
 * cannot collide with a real character.
 */
@Internal
public final class JsonCanonicalizer {

    /** The deepest nesting canonicalized (as Jackson's default limit); deeper input is fingerprinted raw. */
    static final int MAX_DEPTH = 1000;
    private static final long MAX_EXACT = 1L << 53;
    /** Most significant digits taken verbatim: every decimal of this many digits round-trips through a double. */
    private static final int EXACT_DIGITS = 15;
    private static final byte[] HEX = "0123456789abcdef".getBytes(StandardCharsets.US_ASCII);
    private static final VarHandle LITTLE_ENDIAN_LONG =
        MethodHandles.byteArrayViewVarHandle(long[].class, ByteOrder.LITTLE_ENDIAN);

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
    public static final class Pointers {
        public static final Pointers NONE = new Pointers(null, false);

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
        public static Pointers compile(Collection<String> pointers) {
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
     * Reads {@code json[0, length)}, leaves out what {@code ignored} names, and appends the
     * canonical UTF-8 form to {@code out}. When it fails, {@code out} is as it was.
     */
    static void canonicalize(byte[] json, int length, Pointers ignored, CanonicalBuffer out)
        throws NotCanonicalizableException {
        int start = out.length();
        out.reserve(length + 32); // the canonical text is rarely longer than the input
        try {
            Scanner s = new Scanner(json, length, out);
            s.skipWhitespace();
            if (s.pos >= length) {
                throw new NotCanonicalizableException("empty JSON text", null);
            }
            s.value(ignored.root, 0);
            s.skipWhitespace();
            if (s.pos != length) {
                throw new NotCanonicalizableException("content after the JSON value", null);
            }
        } catch (NotCanonicalizableException e) {
            out.truncate(start);
            throw e;
        } catch (RuntimeException | StackOverflowError e) {
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

    private static NotCanonicalizableException invalid(String what) {
        return new NotCanonicalizableException(what, null);
    }

    /** One canonicalization: the input, the position, the output and the members of the objects being written, by depth. */
    private static final class Scanner {
        private final byte[] json;
        private final int length;
        private final CanonicalBuffer out;
        private Members[] members;
        /** Whether the last string read was plain ASCII without escapes (copied as it was). */
        private boolean plain;
        int pos;

        Scanner(byte[] json, int length, CanonicalBuffer out) {
            this.json = json;
            this.length = length;
            this.out = out;
            if (out.members instanceof Members[] cached) {
                this.members = cached;
            } else {
                this.members = new Members[8];
                out.members = this.members;
            }
        }

        void skipWhitespace() {
            int p = pos;
            while (p < length) {
                byte b = json[p];
                if (b > ' ' || (b != ' ' && b != '\n' && b != '\r' && b != '\t')) {
                    break;
                }
                p++;
            }
            pos = p;
        }

        private byte peek() throws NotCanonicalizableException {
            if (pos >= length) {
                throw invalid("unexpected end of the JSON text");
            }
            return json[pos];
        }

        void value(Node node, int depth) throws NotCanonicalizableException {
            if (depth > MAX_DEPTH) {
                throw invalid("nested deeper than " + MAX_DEPTH);
            }
            byte b = peek();
            switch (b) {
                case '{' -> object(node, depth);
                case '[' -> array(node, depth);
                case '"' -> string();
                case 't' -> literal("true");
                case 'f' -> literal("false");
                case 'n' -> literal("null");
                default -> {
                    if (b == '-' || (b >= '0' && b <= '9')) {
                        number();
                    } else {
                        throw invalid("unexpected character");
                    }
                }
            }
        }

        private void literal(String word) throws NotCanonicalizableException {
            int n = word.length();
            if (pos + n > length) {
                throw invalid("truncated literal");
            }
            for (int i = 0; i < n; i++) {
                if (json[pos + i] != word.charAt(i)) {
                    throw invalid("unknown literal");
                }
            }
            pos += n;
            out.ascii(word);
        }

        private void object(Node node, int depth) throws NotCanonicalizableException {
            pos++; // '{'
            out.write('{');
            skipWhitespace();
            if (peek() == '}') {
                pos++;
                out.write('}');
                return;
            }
            Members m = members(depth);
            m.count = 0;
            boolean sorted = true;
            while (true) {
                if (peek() != '"') {
                    throw invalid("a member name must be a string");
                }
                int memberStart = out.length();
                if (m.count > 0) {
                    out.write(',');
                }
                int nameStart = out.length();
                string();
                int nameEnd = out.length();
                boolean namePlain = plain;
                skipWhitespace();
                if (peek() != ':') {
                    throw invalid("':' expected after a member name");
                }
                pos++;
                skipWhitespace();
                Node child = node == null ? null : node.child(decodeName(nameStart, nameEnd), false);
                if (child != null && child.removed) {
                    value(null, depth + 1); // read (and validated) like any value, then left out
                    out.truncate(memberStart);
                } else {
                    out.write(':');
                    value(child, depth + 1);
                    m.add(nameStart, nameEnd, out.length(), namePlain, out.bytes);
                    if (m.count > 1) {
                        int order = m.compare(out.bytes, m.count - 2, m.count - 1);
                        if (order == 0) {
                            throw invalid("duplicate member name");
                        }
                        sorted &= order < 0;
                    }
                }
                skipWhitespace();
                byte b = peek();
                pos++;
                if (b == '}') {
                    break;
                }
                if (b != ',') {
                    throw invalid("',' or '}' expected in an object");
                }
                skipWhitespace();
            }
            if (!sorted) {
                m.reorder(out);
            }
            m.count = 0;
            out.write('}');
        }

        private void array(Node node, int depth) throws NotCanonicalizableException {
            pos++; // '['
            out.write('[');
            skipWhitespace();
            if (peek() == ']') {
                pos++;
                out.write(']');
                return;
            }
            int index = 0;
            boolean first = true;
            while (true) {
                Node child = node == null ? null : node.child(index);
                index++;
                int elementStart = out.length();
                if (!first) {
                    out.write(',');
                }
                value(child, depth + 1);
                if (child != null && child.removed) {
                    out.truncate(elementStart);
                } else {
                    first = false;
                }
                skipWhitespace();
                byte b = peek();
                pos++;
                if (b == ']') {
                    break;
                }
                if (b != ',') {
                    throw invalid("',' or ']' expected in an array");
                }
                skipWhitespace();
            }
            out.write(']');
        }

        /** A string at {@code pos} (its opening quote), written in canonical form. */
        private void string() throws NotCanonicalizableException {
            int open = pos;
            int i = open + 1;
            // eight bytes at a time while none of them is a quote, a backslash, a control or a
            // non-ASCII byte (read little-endian, so the first such byte is the lowest flagged one)
            while (i + 8 <= length) {
                long x = (long) LITTLE_ENDIAN_LONG.get(json, i);
                long quote = x ^ 0x2222222222222222L;
                long backslash = x ^ 0x5C5C5C5C5C5C5C5CL;
                long flagged = ((quote - 0x0101010101010101L) & ~quote)
                    | ((backslash - 0x0101010101010101L) & ~backslash)
                    | ((x - 0x2020202020202020L) & ~x)
                    | x;
                flagged &= 0x8080808080808080L;
                if (flagged != 0) {
                    i += Long.numberOfTrailingZeros(flagged) >>> 3;
                    break;
                }
                i += 8;
            }
            while (i < length) {
                byte b = json[i];
                if (b == '"') {
                    out.write(json, open, i - open + 1); // plain ASCII: already canonical, quotes included
                    pos = i + 1;
                    plain = true;
                    return;
                }
                if (b == '\\' || b < 0x20) { // an escape, a control byte, or any non-ASCII byte (negative)
                    break;
                }
                i++;
            }
            out.write(json, open, i - open); // the plain part, opening quote included
            pos = i;
            plain = false;
            while (true) {
                if (pos >= length) {
                    throw invalid("unterminated string");
                }
                int b = json[pos];
                if (b == '"') {
                    pos++;
                    out.write('"');
                    return;
                }
                if (b == '\\') {
                    escape();
                } else if (b >= 0x20) {
                    int run = pos + 1;
                    while (run < length && json[run] >= 0x20 && json[run] != '"' && json[run] != '\\') {
                        run++;
                    }
                    out.write(json, pos, run - pos);
                    pos = run;
                } else if (b >= 0) {
                    throw invalid("unescaped control character in a string");
                } else {
                    utf8();
                }
            }
        }

        /** An escape sequence at {@code pos}, decoded and written canonically. */
        private void escape() throws NotCanonicalizableException {
            if (pos + 1 >= length) {
                throw invalid("truncated escape");
            }
            byte e = json[pos + 1];
            pos += 2;
            switch (e) {
                case '"', '\\' -> {
                    out.write('\\');
                    out.write(e);
                }
                case '/' -> out.write('/');
                case 'b', 'f', 'n', 'r', 't' -> {
                    out.write('\\');
                    out.write(e);
                }
                case 'u' -> {
                    int unit = hex4();
                    if (Character.isHighSurrogate((char) unit) && pos + 6 <= length && json[pos] == '\\'
                        && json[pos + 1] == 'u') {
                        int save = pos;
                        pos += 2;
                        int low = hex4();
                        if (Character.isLowSurrogate((char) low)) {
                            codePoint(Character.toCodePoint((char) unit, (char) low));
                            return;
                        }
                        pos = save; // not a pair: the high surrogate stands alone
                    }
                    codePoint(unit);
                }
                default -> throw invalid("unknown escape");
            }
        }

        private int hex4() throws NotCanonicalizableException {
            if (pos + 4 > length) {
                throw invalid("truncated unicode escape");
            }
            int v = 0;
            for (int k = 0; k < 4; k++) {
                int d = Character.digit(json[pos + k], 16);
                if (d < 0) {
                    throw invalid("bad unicode escape");
                }
                v = (v << 4) | d;
            }
            pos += 4;
            return v;
        }

        /** Writes one decoded code point (or lone surrogate) with JCS's escaping. */
        private void codePoint(int cp) {
            if (cp == '"' || cp == '\\') {
                out.write('\\');
                out.write(cp);
            } else if (cp < 0x20) {
                out.write('\\');
                switch (cp) {
                    case '\b' -> out.write('b');
                    case '\f' -> out.write('f');
                    case '\n' -> out.write('n');
                    case '\r' -> out.write('r');
                    case '\t' -> out.write('t');
                    default -> {
                        out.write('u');
                        out.write('0');
                        out.write('0');
                        out.write(HEX[cp >> 4]);
                        out.write(HEX[cp & 0xF]);
                    }
                }
            } else if (cp < 0x80) {
                out.write(cp);
            } else if (cp < 0x800) {
                out.write(0xC0 | (cp >> 6));
                out.write(0x80 | (cp & 0x3F));
            } else if (cp < 0x10000) { // a lone surrogate too, in its 3-byte form
                out.write(0xE0 | (cp >> 12));
                out.write(0x80 | ((cp >> 6) & 0x3F));
                out.write(0x80 | (cp & 0x3F));
            } else {
                out.write(0xF0 | (cp >> 18));
                out.write(0x80 | ((cp >> 12) & 0x3F));
                out.write(0x80 | ((cp >> 6) & 0x3F));
                out.write(0x80 | (cp & 0x3F));
            }
        }

        /** A raw multi-byte UTF-8 sequence at {@code pos}: validated (RFC 3629), copied as it is. */
        private void utf8() throws NotCanonicalizableException {
            int b0 = json[pos] & 0xFF;
            int n;
            int min;
            if (b0 >= 0xC2 && b0 <= 0xDF) {
                n = 2;
                min = 0x80;
            } else if (b0 >= 0xE0 && b0 <= 0xEF) {
                n = 3;
                min = 0x800;
            } else if (b0 >= 0xF0 && b0 <= 0xF4) {
                n = 4;
                min = 0x10000;
            } else {
                throw invalid("invalid UTF-8");
            }
            if (pos + n > length) {
                throw invalid("truncated UTF-8");
            }
            int cp = b0 & (0xFF >> (n + 1));
            for (int k = 1; k < n; k++) {
                int c = json[pos + k] & 0xFF;
                if ((c & 0xC0) != 0x80) {
                    throw invalid("invalid UTF-8");
                }
                cp = (cp << 6) | (c & 0x3F);
            }
            if (cp < min || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF)) {
                throw invalid("invalid UTF-8");
            }
            out.write(json, pos, n);
            pos += n;
        }

        private Members members(int depth) {
            if (depth >= members.length) {
                members = Arrays.copyOf(members, Math.max(depth + 1, members.length * 2));
                out.members = members; // kept with this thread's buffer for the next canonicalization
            }
            Members m = members[depth];
            if (m == null) {
                m = new Members();
                members[depth] = m;
            }
            return m;
        }

        /** The name written canonically at {@code out[start, end)} (quotes included), as a Java string. */
        private String decodeName(int start, int end) {
            StringBuilder sb = new StringBuilder(end - start);
            Utf16 units = new Utf16(out.bytes, start + 1, end - 1);
            for (int u = units.next(); u >= 0; u = units.next()) {
                sb.append((char) u);
            }
            return sb.toString();
        }

        /**
         * A number at {@code pos} (RFC 8259 grammar), spelled canonically from its text where that
         * is exact (see the class comment), else through its double value.
         */
        private void number() throws NotCanonicalizableException {
            if (!copyIfCanonical()) {
                spellNumber();
            }
        }

        /**
         * The common case: a number already written as ECMAScript spells it (an integer of at most
         * 15 digits, or a decimal of at most 15 significant digits without trailing zeros or an
         * exponent, down to 0.000001) is copied as it is.
         *
         * @return {@code false}, with {@code pos} unchanged, when the number needs spelling
         */
        private boolean copyIfCanonical() {
            int start = pos;
            int i = start;
            if (json[i] == '-') {
                i++;
            }
            int intStart = i;
            while (i < length && json[i] >= '0' && json[i] <= '9') {
                i++;
            }
            int intDigits = i - intStart;
            if (intDigits == 0 || intDigits > EXACT_DIGITS || (json[intStart] == '0' && intDigits > 1)) {
                return false;
            }
            int significant;
            if (i < length && json[i] == '.') {
                int fracStart = ++i;
                while (i < length && json[i] >= '0' && json[i] <= '9') {
                    i++;
                }
                if (i == fracStart || json[i - 1] == '0') {
                    return false; // no digits, or a trailing zero
                }
                if (json[intStart] == '0') {
                    int zeros = 0;
                    while (json[fracStart + zeros] == '0') {
                        zeros++;
                    }
                    if (zeros > 5) {
                        return false; // 1e-7 and smaller take the exponent form
                    }
                    significant = i - fracStart - zeros;
                } else {
                    significant = intDigits + (i - fracStart);
                }
            } else {
                if (json[intStart] == '0' && intStart > start) {
                    return false; // -0 is 0
                }
                significant = intDigits;
            }
            if (significant > EXACT_DIGITS || (i < length && (json[i] == 'e' || json[i] == 'E'))) {
                return false;
            }
            out.write(json, start, i - start);
            pos = i;
            return true;
        }

        /** Any other number, spelled from its digits and exponent. */
        private void spellNumber() throws NotCanonicalizableException {
            int start = pos;
            boolean negative = json[pos] == '-';
            if (negative) {
                pos++;
            }
            char[] d = out.digits;
            int k = 0;
            int intDigits = 0;
            if (pos >= length) {
                throw invalid("truncated number");
            }
            if (json[pos] == '0') {
                d = digits(d, k + 1);
                d[k++] = '0';
                intDigits = 1;
                pos++;
            } else if (json[pos] >= '1' && json[pos] <= '9') {
                while (pos < length && json[pos] >= '0' && json[pos] <= '9') {
                    d = digits(d, k + 1);
                    d[k++] = (char) json[pos++];
                    intDigits++;
                }
            } else {
                throw invalid("bad number");
            }
            if (pos < length && json[pos] == '.') {
                pos++;
                int before = k;
                while (pos < length && json[pos] >= '0' && json[pos] <= '9') {
                    d = digits(d, k + 1);
                    d[k++] = (char) json[pos++];
                }
                if (k == before) {
                    throw invalid("a fraction needs digits");
                }
            }
            long exponent = 0;
            if (pos < length && (json[pos] == 'e' || json[pos] == 'E')) {
                pos++;
                boolean negativeExponent = false;
                if (pos < length && (json[pos] == '+' || json[pos] == '-')) {
                    negativeExponent = json[pos] == '-';
                    pos++;
                }
                int expStart = pos;
                while (pos < length && json[pos] >= '0' && json[pos] <= '9') {
                    if (exponent < 100_000) {
                        exponent = exponent * 10 + (json[pos] - '0');
                    }
                    pos++;
                }
                if (pos == expStart) {
                    throw invalid("an exponent needs digits");
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
                viaDouble(Double.parseDouble(new String(json, start, pos - start, StandardCharsets.US_ASCII)));
                return;
            }
            if (negative) {
                out.write('-');
            }
            spell(d, lead, digits, (int) n);
        }

        private char[] digits(char[] d, int need) {
            if (need > d.length) {
                d = Arrays.copyOf(d, Math.max(need, d.length * 2));
                out.digits = d;
            }
            return d;
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

        private void viaDouble(double v) throws NotCanonicalizableException {
            if (Double.isNaN(v) || Double.isInfinite(v)) {
                throw invalid("number outside IEEE-754 double range");
            }
            if (v == Math.rint(v) && Math.abs(v) <= MAX_EXACT) {
                // an integral double up to 2^53 prints as its integer digits in ECMAScript; -0 as 0
                out.ascii(Long.toString((long) v));
            } else {
                try {
                    out.ascii(NumberToJSON.serializeNumber(v));
                } catch (java.io.IOException e) {
                    throw new NotCanonicalizableException("number not serializable", e);
                }
            }
        }
    }

    /**
     * Compares two names written canonically ({@code "..."}, quotes included) in the UTF-16
     * code-unit order of the strings they stand for, as JCS sorts members. Plain ASCII is
     * compared byte for byte; from the first escape or non-ASCII byte on, code units are decoded.
     */
    static int compareNames(byte[] a, int aStart, int aEnd, byte[] b, int bStart, int bEnd) {
        int i = aStart + 1;
        int j = bStart + 1;
        int aLast = aEnd - 1;
        int bLast = bEnd - 1;
        while (i < aLast && j < bLast) {
            byte x = a[i];
            byte y = b[j];
            if (x < 0x20 || x == '\\' || y < 0x20 || y == '\\') {
                Utf16 ca = new Utf16(a, i, aLast);
                Utf16 cb = new Utf16(b, j, bLast);
                while (true) {
                    int ua = ca.next();
                    int ub = cb.next();
                    if (ua != ub) {
                        return ua == -1 ? -1 : ub == -1 ? 1 : ua - ub;
                    }
                    if (ua == -1) {
                        return 0;
                    }
                }
            }
            if (x != y) {
                return x - y;
            }
            i++;
            j++;
        }
        return i < aLast ? 1 : j < bLast ? -1 : 0;
    }

    /** The UTF-16 code units of canonically written text (escapes decoded, UTF-8 decoded). */
    private static final class Utf16 {
        private final byte[] b;
        private final int end;
        private int i;
        private int pendingLow = -1;

        Utf16(byte[] b, int from, int end) {
            this.b = b;
            this.i = from;
            this.end = end;
        }

        /** @return the next code unit, or -1 at the end */
        int next() {
            if (pendingLow >= 0) {
                int low = pendingLow;
                pendingLow = -1;
                return low;
            }
            if (i >= end) {
                return -1;
            }
            int c = b[i] & 0xFF;
            int cp;
            if (c == '\\') {
                byte e = b[i + 1];
                cp = switch (e) {
                    case 'b' -> '\b';
                    case 'f' -> '\f';
                    case 'n' -> '\n';
                    case 'r' -> '\r';
                    case 't' -> '\t';
                    case 'u' -> Integer.parseInt(new String(b, i + 2, 4, StandardCharsets.US_ASCII), 16);
                    default -> e; // \" and \\
                };
                i += e == 'u' ? 6 : 2;
            } else if (c < 0x80) {
                cp = c;
                i++;
            } else if (c < 0xE0) {
                cp = ((c & 0x1F) << 6) | (b[i + 1] & 0x3F);
                i += 2;
            } else if (c < 0xF0) {
                cp = ((c & 0x0F) << 12) | ((b[i + 1] & 0x3F) << 6) | (b[i + 2] & 0x3F);
                i += 3;
            } else {
                cp = ((c & 0x07) << 18) | ((b[i + 1] & 0x3F) << 12) | ((b[i + 2] & 0x3F) << 6) | (b[i + 3] & 0x3F);
                i += 4;
            }
            if (cp >= 0x10000) {
                pendingLow = Character.lowSurrogate(cp);
                return Character.highSurrogate(cp);
            }
            return cp;
        }
    }

    /**
     * The members of one object as written: the byte ranges of each name and of each
     * {@code "name":value}, and for a plain ASCII name its first 8 bytes packed into a sort key
     * (byte order is UTF-16 order for ASCII, and zero padding sorts a prefix first), so most
     * comparisons are one comparison of two longs.
     */
    private static final class Members {
        private static final VarHandle BIG_ENDIAN_LONG =
            MethodHandles.byteArrayViewVarHandle(long[].class, ByteOrder.BIG_ENDIAN);

        int[] nameStarts = new int[8];
        int[] nameEnds = new int[8];
        int[] ends = new int[8];
        long[] keys = new long[8];
        boolean[] plain = new boolean[8];
        int count;
        private int[] order = new int[8];

        void add(int nameStart, int nameEnd, int end, boolean plainName, byte[] bytes) {
            if (count == nameStarts.length) {
                int n = count * 2;
                nameStarts = Arrays.copyOf(nameStarts, n);
                nameEnds = Arrays.copyOf(nameEnds, n);
                ends = Arrays.copyOf(ends, n);
                keys = Arrays.copyOf(keys, n);
                plain = Arrays.copyOf(plain, n);
            }
            nameStarts[count] = nameStart;
            nameEnds[count] = nameEnd;
            ends[count] = end;
            plain[count] = plainName;
            if (plainName) {
                int from = nameStart + 1;
                int len = Math.min(8, nameEnd - 1 - from);
                long key;
                if (from + 8 <= bytes.length) { // the bytes after a short name are masked off
                    key = len == 0 ? 0 : (long) BIG_ENDIAN_LONG.get(bytes, from) & (-1L << (8 * (8 - len)));
                } else {
                    key = 0;
                    for (int k = 0; k < 8; k++) {
                        key = (key << 8) | (k < len ? bytes[from + k] : 0);
                    }
                }
                keys[count] = key;
            }
            count++;
        }

        /** Compares the names of members {@code x} and {@code y} in JCS order; 0 for the same name. */
        int compare(byte[] bytes, int x, int y) {
            if (plain[x] && plain[y]) {
                int c = Long.compare(keys[x], keys[y]); // ASCII bytes: the signed comparison is right
                if (c != 0 || (nameEnds[x] - nameStarts[x] <= 10 && nameEnds[y] - nameStarts[y] <= 10)) {
                    return c;
                }
            }
            return compareNames(bytes, nameStarts[x], nameEnds[x], bytes, nameStarts[y], nameEnds[y]);
        }

        /** Rewrites the members, which end at {@code out}'s end, in name order; fails on a duplicate name. */
        void reorder(CanonicalBuffer out) throws NotCanonicalizableException {
            if (order.length < count) {
                order = new int[nameStarts.length];
            }
            for (int i = 0; i < count; i++) {
                order[i] = i;
            }
            byte[] bytes = out.bytes;
            for (int i = 1; i < count; i++) { // insertion sort: objects have few members
                int m = order[i];
                int j = i - 1;
                int c;
                while (j >= 0 && (c = compare(bytes, order[j], m)) >= 0) {
                    if (c == 0) {
                        throw invalid("duplicate member name");
                    }
                    order[j + 1] = order[j];
                    j--;
                }
                order[j + 1] = m;
            }
            int from = nameStarts[0];
            byte[] copy = out.copyToScratch(from);
            out.truncate(from);
            for (int i = 0; i < count; i++) {
                int m = order[i];
                if (i > 0) {
                    out.write(',');
                }
                out.write(copy, nameStarts[m] - from, ends[m] - nameStarts[m]);
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
