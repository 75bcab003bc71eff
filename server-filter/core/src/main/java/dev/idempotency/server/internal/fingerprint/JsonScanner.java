package dev.idempotency.server.internal.fingerprint;

import dev.idempotency.server.internal.fingerprint.JsonCanonicalizer.NotCanonicalizableException;
import dev.idempotency.server.internal.fingerprint.JsonPointers.Node;

import java.lang.invoke.MethodHandles;
import java.lang.invoke.VarHandle;
import java.nio.ByteOrder;
import java.nio.charset.StandardCharsets;
import java.util.Arrays;

/** Values, objects, arrays and strings of one canonicalization (see {@link JsonCanonicalizer}). */
final class JsonScanner extends NumberScanner {

    private static final byte[] HEX = "0123456789abcdef".getBytes(StandardCharsets.US_ASCII);
    private static final VarHandle LITTLE_ENDIAN_LONG =
        MethodHandles.byteArrayViewVarHandle(long[].class, ByteOrder.LITTLE_ENDIAN);

    private JsonMembers[] members;
    /** Whether the last string read was plain ASCII without escapes (copied as it was). */
    private boolean plain;

    JsonScanner(byte[] json, int length, CanonicalBuffer out) {
        super(json, length, out);
        if (out.members instanceof JsonMembers[] cached) {
            this.members = cached;
        } else {
            this.members = new JsonMembers[8];
            out.members = this.members;
        }
    }


    void value(Node node, int depth) throws NotCanonicalizableException {
        if (depth > JsonCanonicalizer.MAX_DEPTH) {
            throw invalid("nested deeper than " + JsonCanonicalizer.MAX_DEPTH);
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
        JsonMembers m = members(depth);
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

    private JsonMembers members(int depth) {
        if (depth >= members.length) {
            members = Arrays.copyOf(members, Math.max(depth + 1, members.length * 2));
            out.members = members; // kept with this thread's buffer for the next canonicalization
        }
        JsonMembers m = members[depth];
        if (m == null) {
            m = new JsonMembers();
            members[depth] = m;
        }
        return m;
    }

    /** The name written canonically at {@code out[start, end)} (quotes included), as a Java string. */
    private String decodeName(int start, int end) {
        StringBuilder sb = new StringBuilder(end - start);
        JsonMembers.Utf16 units = new JsonMembers.Utf16(out.bytes, start + 1, end - 1);
        for (int u = units.next(); u >= 0; u = units.next()) {
            sb.append((char) u);
        }
        return sb.toString();
    }
}
