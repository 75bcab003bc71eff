package dev.idempotency.server.internal.fingerprint;

import java.nio.charset.StandardCharsets;
import java.util.Base64;
import java.util.Locale;

/**
 * A {@code multipart/form-data} or {@code multipart/mixed} body by its content (CONTRACT S7): the
 * parts in order, each as its name, filename, {@code Content-Type} and bytes (decoded where the
 * part says {@code Content-Transfer-Encoding: base64} or {@code quoted-printable}). The boundary,
 * the preamble and the epilogue, and the rest of each part's headers, are never part of it, so a
 * client that draws a new boundary for every send (curl, stripe-java, browsers) still sends "the
 * same request" when it retries. Line ends may be CRLF, as RFC 2046 says, or a bare LF.
 *
 * <p>Reads the buffered body in place, without a copy of a part (only an encoded part is decoded
 * into an array of its own); a body that is not a well-formed multipart body of its boundary is
 * an {@link UnreadableBodyException} that says what is wrong. Stateless.
 */
final class MultipartParts {

    /** Longer than RFC 2046's 70 characters: a lenient bound on a boundary a client may draw. */
    private static final int MAX_BOUNDARY = 200;
    private static final byte CR = '\r';
    private static final byte LF = '\n';

    private MultipartParts() {
    }

    /** @return whether {@code mediaType} (lowercase, without parameters) is fingerprinted by this class */
    static boolean isMultipart(String mediaType) {
        return mediaType.equals("multipart/form-data") || mediaType.equals("multipart/mixed");
    }

    /**
     * Writes the body's parts into {@code sink}: their count, then per part its name, filename and
     * content type (each empty where the part has none) and its bytes, each length-prefixed.
     *
     * @throws UnreadableBodyException when the content type names no boundary, or the body is not
     *                                 a multipart body of that boundary
     */
    static void write(DigestSink sink, String contentType, byte[] body, int length) {
        byte[] delimiter = ("--" + boundary(contentType)).getBytes(StandardCharsets.ISO_8859_1);
        int at = firstDelimiter(body, length, delimiter);
        if (at < 0) {
            throw new UnreadableBodyException("the multipart body has no line \"--" + new String(delimiter, 2,
                delimiter.length - 2, StandardCharsets.ISO_8859_1) + "\", the boundary its Content-Type names");
        }
        int p = at + delimiter.length;
        int parts = 0;
        while (!startsWith(body, length, p, (byte) '-', (byte) '-')) { // "--" after it: the close delimiter
            p = lineEnd(body, length, p, parts);
            Part part = new Part();
            p = part.readHeaders(body, length, p, parts + 1);
            int lf = nextDelimiter(body, length, p, delimiter);
            if (lf < 0) {
                throw new UnreadableBodyException("the multipart body ends inside part " + (parts + 1)
                    + ": no boundary line follows it");
            }
            // the line end before a delimiter belongs to the delimiter, not to the part
            int contentEnd = Math.max(p, lf > p && body[lf - 1] == CR ? lf - 1 : lf);
            sink.field(part.name);
            sink.field(part.filename);
            sink.field(part.contentType);
            part.writeContent(sink, body, p, contentEnd, parts + 1);
            parts++;
            p = lf + 1 + delimiter.length;
        }
        sink.field(parts); // what follows the close delimiter is the epilogue
    }

    /** @return the boundary parameter of {@code contentType}, unquoted */
    private static String boundary(String contentType) {
        for (String param : contentType.split(";")) {
            String p = param.trim();
            if (p.regionMatches(true, 0, "boundary=", 0, 9)) {
                String b = p.substring(9).trim();
                if (b.length() >= 2 && b.startsWith("\"") && b.endsWith("\"")) {
                    b = b.substring(1, b.length() - 1);
                }
                if (b.isEmpty() || b.length() > MAX_BOUNDARY) {
                    throw new UnreadableBodyException("the multipart boundary in the Content-Type must be 1-"
                        + MAX_BOUNDARY + " characters, was " + b.length());
                }
                return b;
            }
        }
        throw new UnreadableBodyException("a multipart Content-Type needs a boundary parameter, and this one has none");
    }

    /** @return where the first delimiter line starts: at the body's start, or after a line end (a preamble before it) */
    private static int firstDelimiter(byte[] body, int length, byte[] delimiter) {
        if (startsWith(body, length, 0, delimiter)) {
            return 0;
        }
        int found = nextDelimiter(body, length, 0, delimiter);
        return found < 0 ? -1 : found + 1;
    }

    /**
     * @return the index of the LF that ends the line before the next delimiter line at or after
     *     {@code from}, or -1
     */
    private static int nextDelimiter(byte[] body, int length, int from, byte[] delimiter) {
        for (int i = from; i < length; i++) {
            if (body[i] == LF && startsWith(body, length, i + 1, delimiter)) {
                return i;
            }
        }
        // a part that is empty and directly followed by its delimiter (no line end of its own)
        return startsWith(body, length, from, delimiter) && from > 0 && body[from - 1] == LF ? from - 1 : -1;
    }

    /** Skips the transport padding after a delimiter and its line end; @return where the part's headers start */
    private static int lineEnd(byte[] body, int length, int p, int partsSoFar) {
        while (p < length && (body[p] == ' ' || body[p] == '\t')) {
            p++;
        }
        if (p < length && body[p] == CR) {
            p++;
        }
        if (p >= length || body[p] != LF) {
            throw new UnreadableBodyException("the multipart body has text after the boundary line "
                + (partsSoFar == 0 ? "that opens it" : "after part " + partsSoFar) + " where a line end belongs");
        }
        return p + 1;
    }

    private static boolean startsWith(byte[] body, int length, int at, byte... prefix) {
        if (at < 0 || length - at < prefix.length) {
            return false;
        }
        for (int i = 0; i < prefix.length; i++) {
            if (body[at + i] != prefix[i]) {
                return false;
            }
        }
        return true;
    }

    /** One part's fingerprinted headers, read from its header lines. */
    private static final class Part {
        String name = "";
        String filename = "";
        String contentType = "";
        String encoding = "";

        /** @return where the part's content starts, past the blank line that ends its headers */
        int readHeaders(byte[] body, int length, int p, int number) {
            StringBuilder header = null;
            while (true) {
                int eol = p;
                while (eol < length && body[eol] != LF) {
                    eol++;
                }
                if (eol >= length) {
                    throw new UnreadableBodyException("the headers of multipart part " + number
                        + " do not end with a blank line");
                }
                int end = eol > p && body[eol - 1] == CR ? eol - 1 : eol;
                if (end == p) { // the blank line
                    if (header != null) {
                        take(header.toString(), number);
                    }
                    return eol + 1;
                }
                String line = new String(body, p, end - p, StandardCharsets.UTF_8);
                if (line.charAt(0) == ' ' || line.charAt(0) == '\t') {
                    if (header == null) {
                        throw new UnreadableBodyException("multipart part " + number + " starts with a continuation line");
                    }
                    header.append(' ').append(line.trim());
                } else {
                    if (header != null) {
                        take(header.toString(), number);
                    }
                    header = new StringBuilder(line);
                }
                p = eol + 1;
            }
        }

        private void take(String header, int number) {
            int colon = header.indexOf(':');
            if (colon <= 0) {
                throw new UnreadableBodyException("multipart part " + number + " has a header line without a name"
                    + " and a colon");
            }
            String name = header.substring(0, colon).trim().toLowerCase(Locale.ROOT);
            String value = header.substring(colon + 1).trim();
            switch (name) {
                case "content-disposition" -> {
                    this.name = param(value, "name");
                    String extended = param(value, "filename*");
                    this.filename = extended.isEmpty() ? param(value, "filename") : extended;
                }
                case "content-type" -> this.contentType = value;
                case "content-transfer-encoding" -> this.encoding = value.toLowerCase(Locale.ROOT);
                default -> {
                    // other part headers are not the request's content
                }
            }
        }

        /** @return a parameter's value from a header value such as {@code form-data; name="a"; filename=b}, or "" */
        private static String param(String value, String wanted) {
            int i = value.indexOf(';');
            while (i >= 0 && i < value.length()) {
                int start = i + 1;
                while (start < value.length() && value.charAt(start) == ' ') {
                    start++;
                }
                int eq = value.indexOf('=', start);
                if (eq < 0) {
                    return "";
                }
                String key = value.substring(start, eq).trim();
                int v = eq + 1;
                String result;
                int next;
                if (v < value.length() && value.charAt(v) == '"') {
                    StringBuilder sb = new StringBuilder();
                    int j = v + 1;
                    while (j < value.length() && value.charAt(j) != '"') {
                        char c = value.charAt(j);
                        if (c == '\\' && j + 1 < value.length()) {
                            c = value.charAt(++j);
                        }
                        sb.append(c);
                        j++;
                    }
                    result = sb.toString();
                    next = value.indexOf(';', j);
                } else {
                    next = value.indexOf(';', v);
                    result = (next < 0 ? value.substring(v) : value.substring(v, next)).trim();
                }
                if (key.equalsIgnoreCase(wanted)) {
                    return result;
                }
                i = next;
            }
            return "";
        }

        void writeContent(DigestSink sink, byte[] body, int from, int to, int number) {
            switch (encoding) {
                case "base64" -> {
                    try {
                        sink.field(Base64.getMimeDecoder().decode(new String(body, from, to - from, StandardCharsets.ISO_8859_1)));
                    } catch (IllegalArgumentException e) {
                        throw new UnreadableBodyException("multipart part " + number + " says base64 but is not: "
                            + e.getMessage());
                    }
                }
                case "quoted-printable" -> sink.field(quotedPrintable(body, from, to, number));
                default -> sink.field(body, from, to - from);
            }
        }

        private static byte[] quotedPrintable(byte[] body, int from, int to, int number) {
            byte[] out = new byte[to - from];
            int n = 0;
            for (int i = from; i < to; i++) {
                byte b = body[i];
                if (b != '=') {
                    out[n++] = b;
                    continue;
                }
                if (i + 1 < to && (body[i + 1] == LF || (body[i + 1] == CR && i + 2 < to && body[i + 2] == LF))) {
                    i += body[i + 1] == CR ? 2 : 1; // a soft line break
                    continue;
                }
                int hi = i + 2 < to ? Character.digit(body[i + 1], 16) : -1;
                int lo = i + 2 < to ? Character.digit(body[i + 2], 16) : -1;
                if (hi < 0 || lo < 0) {
                    throw new UnreadableBodyException("multipart part " + number
                        + " says quoted-printable but has an '=' that is not followed by two hex digits");
                }
                out[n++] = (byte) (hi << 4 | lo);
                i += 2;
            }
            return java.util.Arrays.copyOf(out, n);
        }
    }
}
