package dev.idempotency.testsupport;

import java.io.ByteArrayOutputStream;
import java.io.EOFException;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Locale;

/**
 * The HTTP/1.1 the proxy reads on both sides: one request or one response at a time, its head
 * parsed only as far as framing needs (Content-Length, chunked, Connection, Expect: 100-continue,
 * upgrades), its bytes kept exactly as received so they are forwarded unchanged.
 */
final class HttpMessages {

    private HttpMessages() {
    }

    private static final int MAX_HEAD = 64 * 1024;

    static final byte[] CONTINUE = "HTTP/1.1 100 Continue\r\n\r\n".getBytes(StandardCharsets.ISO_8859_1);

    record Request(byte[] bytes, String method, boolean close, boolean continueSent) {
    }

    record Response(byte[] bytes, boolean close, boolean switching) {
    }

    /** One whole request, or null on end of stream before its first byte. */
    static Request readRequest(Reader in, OutputStream clientOut) throws IOException {
        ByteArrayOutputStream raw = new ByteArrayOutputStream();
        Head head = in.readHead(raw);
        if (head == null) {
            return null;
        }
        String[] start = head.startLine.split(" ", 3);
        if (start.length < 3) {
            throw new IOException("bad request line: " + head.startLine);
        }
        String method = start[0];
        String version = start[2].trim();
        boolean chunked = false;
        long length = 0;
        String te = head.value("transfer-encoding");
        if (te != null) {
            if (!lastToken(te).equals("chunked")) {
                throw new IOException("request transfer-encoding without chunked: " + te);
            }
            chunked = true;
        } else {
            length = contentLength(head);
        }
        boolean continueSent = false;
        String expect = head.value("expect");
        if (expect != null && expect.trim().equalsIgnoreCase("100-continue") && (chunked || length > 0)
            && version.equals("HTTP/1.1")) {
            clientOut.write(CONTINUE);
            clientOut.flush();
            continueSent = true;
        }
        if (chunked) {
            in.copyChunked(raw);
        } else {
            in.copy(length, raw);
        }
        return new Request(raw.toByteArray(), method, wantsClose(head, version), continueSent);
    }

    /** The interim responses and the final one, or null on end of stream before its first byte. */
    static Response readResponse(Reader in, Request req) throws IOException {
        ByteArrayOutputStream raw = new ByteArrayOutputStream();
        while (true) {
            int mark = raw.size();
            Head head = in.readHead(raw);
            if (head == null) {
                if (raw.size() == 0) {
                    return null;
                }
                throw new EOFException("upstream closed after an interim response");
            }
            String[] start = head.startLine.split(" ", 3);
            if (start.length < 2 || start[1].length() != 3) {
                throw new IOException("bad status line: " + head.startLine);
            }
            String version = start[0];
            int status;
            try {
                status = Integer.parseInt(start[1]);
            } catch (NumberFormatException e) {
                throw new IOException("bad status line: " + head.startLine);
            }
            if (status == 101) {
                return new Response(raw.toByteArray(), false, true);
            }
            if (status >= 100 && status < 200) {
                if (status == 100 && req.continueSent) {
                    byte[] kept = Arrays.copyOf(raw.toByteArray(), mark); // the client had ours
                    raw.reset();
                    raw.write(kept);
                }
                continue;
            }
            boolean close = wantsClose(head, version);
            if (req.method.equals("HEAD") || status == 204 || status == 304) {
                return new Response(raw.toByteArray(), close, false);
            }
            String te = head.value("transfer-encoding");
            if (te != null) {
                if (lastToken(te).equals("chunked")) {
                    in.copyChunked(raw);
                } else {
                    in.copyToEnd(raw);
                    close = true;
                }
            } else if (head.value("content-length") != null) {
                in.copy(contentLength(head), raw);
            } else {
                in.copyToEnd(raw);
                close = true;
            }
            return new Response(raw.toByteArray(), close, false);
        }
    }

    private static boolean wantsClose(Head head, String version) {
        String connection = head.value("connection");
        List<String> tokens = connection == null ? List.of() : tokens(connection);
        if (tokens.contains("close")) {
            return true;
        }
        return version.equals("HTTP/1.0") && !tokens.contains("keep-alive");
    }

    private static long contentLength(Head head) throws IOException {
        String cl = head.value("content-length");
        if (cl == null) {
            return 0;
        }
        long n = -1;
        for (String v : cl.split(",")) { // repeated identical values are allowed
            try {
                long x = Long.parseLong(v.trim());
                if (x < 0 || (n >= 0 && x != n)) {
                    throw new IOException("bad content-length: " + cl);
                }
                n = x;
            } catch (NumberFormatException e) {
                throw new IOException("bad content-length: " + cl);
            }
        }
        return n;
    }

    private static String lastToken(String list) {
        List<String> t = tokens(list);
        return t.isEmpty() ? "" : t.get(t.size() - 1);
    }

    private static List<String> tokens(String list) {
        List<String> out = new ArrayList<>();
        for (String s : list.split(",")) {
            String t = s.trim().toLowerCase(Locale.ROOT);
            if (!t.isEmpty()) {
                out.add(t);
            }
        }
        return out;
    }

    /** A message head: start line and header fields (names lower-cased, repeated ones joined). */
    private static final class Head {
        final String startLine;
        final List<String[]> fields = new ArrayList<>();

        Head(String text) throws IOException {
            String[] lines = text.split("\n");
            this.startLine = stripCr(lines[0]);
            for (int i = 1; i < lines.length; i++) {
                String line = stripCr(lines[i]);
                if (line.isEmpty()) {
                    continue;
                }
                int colon = line.indexOf(':');
                if (colon <= 0) {
                    throw new IOException("bad header line: " + line);
                }
                fields.add(new String[] {line.substring(0, colon).trim().toLowerCase(Locale.ROOT),
                    line.substring(colon + 1).trim()});
            }
        }

        String value(String name) {
            String v = null;
            for (String[] f : fields) {
                if (f[0].equals(name)) {
                    v = v == null ? f[1] : v + ", " + f[1];
                }
            }
            return v;
        }

        private static String stripCr(String s) {
            return s.endsWith("\r") ? s.substring(0, s.length() - 1) : s;
        }
    }

    /** A buffered input that copies every byte it consumes, verbatim, to a sink. */
    static final class Reader {
        private final InputStream in;
        private final byte[] buf = new byte[16 * 1024];
        private int pos;
        private int lim;

        Reader(InputStream in) {
            this.in = in;
        }

        private boolean fill() throws IOException {
            if (pos < lim) {
                return true;
            }
            int n = in.read(buf);
            if (n < 0) {
                return false;
            }
            pos = 0;
            lim = n;
            return true;
        }

        private int read() throws IOException {
            return fill() ? buf[pos++] & 0xff : -1;
        }

        /** Up to and including the blank line; null on end of stream before the first byte. */
        Head readHead(ByteArrayOutputStream sink) throws IOException {
            ByteArrayOutputStream head = new ByteArrayOutputStream(512);
            int b;
            int newlines = 0; // consecutive line ends, ignoring CR
            while ((b = read()) >= 0) {
                head.write(b);
                if (b == '\n') {
                    if (++newlines == 2) {
                        byte[] bytes = head.toByteArray();
                        sink.write(bytes);
                        return new Head(new String(bytes, StandardCharsets.ISO_8859_1));
                    }
                } else if (b != '\r') {
                    newlines = 0;
                }
                if (head.size() > MAX_HEAD) {
                    throw new IOException("message head over " + MAX_HEAD + " bytes");
                }
            }
            if (head.size() == 0) {
                return null;
            }
            throw new EOFException("end of stream inside a message head");
        }

        String readLine(ByteArrayOutputStream sink) throws IOException {
            ByteArrayOutputStream line = new ByteArrayOutputStream(32);
            int b;
            while ((b = read()) >= 0) {
                sink.write(b);
                if (b == '\n') {
                    String s = line.toString(StandardCharsets.ISO_8859_1);
                    return s.endsWith("\r") ? s.substring(0, s.length() - 1) : s;
                }
                line.write(b);
                if (line.size() > MAX_HEAD) {
                    throw new IOException("line over " + MAX_HEAD + " bytes");
                }
            }
            throw new EOFException("end of stream inside a line");
        }

        void copy(long n, ByteArrayOutputStream sink) throws IOException {
            while (n > 0) {
                if (!fill()) {
                    throw new EOFException("end of stream with " + n + " body bytes missing");
                }
                int k = (int) Math.min(n, lim - pos);
                sink.write(buf, pos, k);
                pos += k;
                n -= k;
            }
        }

        /** Chunks, the last chunk and the trailer section, through its blank line. */
        void copyChunked(ByteArrayOutputStream sink) throws IOException {
            while (true) {
                String line = readLine(sink);
                int semi = line.indexOf(';');
                String hex = (semi >= 0 ? line.substring(0, semi) : line).trim();
                long size;
                try {
                    size = Long.parseLong(hex, 16);
                } catch (NumberFormatException e) {
                    throw new IOException("bad chunk size line: " + line);
                }
                if (size < 0) {
                    throw new IOException("bad chunk size line: " + line);
                }
                if (size == 0) {
                    while (!readLine(sink).isEmpty()) {
                        // trailer field, copied
                    }
                    return;
                }
                copy(size, sink);
                if (!readLine(sink).isEmpty()) {
                    throw new IOException("chunk data not followed by CRLF");
                }
            }
        }

        void copyToEnd(ByteArrayOutputStream sink) throws IOException {
            while (fill()) {
                sink.write(buf, pos, lim - pos);
                pos = lim;
            }
        }

        void transferTo(OutputStream out) throws IOException {
            while (fill()) {
                out.write(buf, pos, lim - pos);
                out.flush();
                pos = lim;
            }
        }
    }
}
