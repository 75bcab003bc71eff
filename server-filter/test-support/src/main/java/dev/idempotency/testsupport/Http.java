package dev.idempotency.testsupport;

import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.Socket;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;

/**
 * A byte-exact HTTP client for the filter-level tests of every module:
 * {@link java.net.http.HttpClient} for ordinary requests, and a raw socket for header bytes and
 * framings that well-behaved clients refuse to send. Never throws on 4xx/5xx.
 */
public final class Http {

    private static final HttpClient CLIENT = HttpClient.newBuilder()
        .version(HttpClient.Version.HTTP_1_1)
        .connectTimeout(Duration.ofSeconds(5))
        .build();

    private final URI base;

    public Http(URI base) {
        this.base = base;
    }

    public HttpResponse<byte[]> post(String path, String key, String contentType, byte[] body, String... headers) {
        return send("POST", path, key, contentType, body, headers);
    }

    public HttpResponse<byte[]> postJson(String path, String key, String json, String... headers) {
        return post(path, key, "application/json", json.getBytes(StandardCharsets.UTF_8), headers);
    }

    public HttpResponse<byte[]> send(String method, String path, String key, String contentType, byte[] body,
                              String... headers) {
        HttpRequest.Builder b = HttpRequest.newBuilder(base.resolve(path))
            .timeout(Duration.ofSeconds(30))
            .method(method, body == null ? HttpRequest.BodyPublishers.noBody() : HttpRequest.BodyPublishers.ofByteArray(body));
        if (key != null) {
            b.header("Idempotency-Key", key);
        }
        if (contentType != null) {
            b.header("Content-Type", contentType);
        }
        for (int i = 0; i < headers.length; i += 2) {
            b.header(headers[i], headers[i + 1]);
        }
        try {
            return CLIENT.send(b.build(), HttpResponse.BodyHandlers.ofByteArray());
        } catch (IOException e) {
            throw new IllegalStateException(e);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new IllegalStateException(e);
        }
    }

    /** @return the body as UTF-8 text */
    public static String body(HttpResponse<byte[]> response) {
        return new String(response.body(), StandardCharsets.UTF_8);
    }

    /** A raw response: status line and header lines, undecoded. */
    public record Raw(int status, List<String> headerLines, String body) {
    }

    /** Sends a POST whose Idempotency-Key header lines are given as raw ISO-8859-1 bytes. */
    public Raw rawPost(String path, List<byte[]> keyHeaderValues) {
        return raw(path, keyHeaderValues, "Content-Length: 2\r\n", "{}".getBytes(StandardCharsets.ISO_8859_1));
    }

    /** Sends a JSON POST with {@code Transfer-Encoding: chunked} (no Content-Length), in 4 KiB chunks. */
    public Raw chunkedPost(String path, String key, byte[] body) {
        java.io.ByteArrayOutputStream chunks = new java.io.ByteArrayOutputStream();
        for (int off = 0; off < body.length; off += 4096) {
            int len = Math.min(4096, body.length - off);
            chunks.writeBytes((Integer.toHexString(len) + "\r\n").getBytes(StandardCharsets.ISO_8859_1));
            chunks.write(body, off, len);
            chunks.writeBytes("\r\n".getBytes(StandardCharsets.ISO_8859_1));
        }
        chunks.writeBytes("0\r\n\r\n".getBytes(StandardCharsets.ISO_8859_1));
        return raw(path, List.of(key.getBytes(StandardCharsets.ISO_8859_1)), "Transfer-Encoding: chunked\r\n",
            chunks.toByteArray());
    }

    private Raw raw(String path, List<byte[]> keyHeaderValues, String framingHeader, byte[] framedBody) {
        try (Socket socket = new Socket(base.getHost(), base.getPort())) {
            socket.setSoTimeout(10_000);
            OutputStream out = socket.getOutputStream();
            String head = "POST " + path + " HTTP/1.1\r\nHost: localhost\r\n"
                + "Content-Type: application/json\r\n" + framingHeader + "Connection: close\r\n";
            out.write(head.getBytes(StandardCharsets.ISO_8859_1));
            for (byte[] v : keyHeaderValues) {
                out.write("Idempotency-Key: ".getBytes(StandardCharsets.ISO_8859_1));
                out.write(v);
                out.write("\r\n".getBytes(StandardCharsets.ISO_8859_1));
            }
            out.write("\r\n".getBytes(StandardCharsets.ISO_8859_1));
            InputStream in = socket.getInputStream();
            writeUntilAnswered(out, in, framedBody);
            String text = readUntilClosed(in);
            int split = text.indexOf("\r\n\r\n");
            String[] lines = text.substring(0, split).split("\r\n");
            int status = Integer.parseInt(lines[0].split(" ")[1]);
            List<String> headerLines = new ArrayList<>(List.of(lines).subList(1, lines.length));
            return new Raw(status, headerLines, text.substring(split + 4));
        } catch (IOException e) {
            throw new IllegalStateException(e);
        }
    }

    /**
     * Writes the body in pieces and stops once the server has begun to answer: a server that
     * rejects a body (413) answers and closes before reading the rest.
     */
    private static void writeUntilAnswered(OutputStream out, InputStream in, byte[] body) {
        try {
            for (int off = 0; off < body.length && in.available() == 0; off += 1024) {
                out.write(body, off, Math.min(1024, body.length - off));
                out.flush();
            }
        } catch (IOException e) {
            // the server answered and closed before reading the whole body; its answer is read next
        }
    }

    /**
     * Reads the response until the server closes. A server that closes with part of the request
     * unread resets the connection; a reset after the response's head has arrived ends the
     * response, before it the request failed.
     */
    private static String readUntilClosed(InputStream in) throws IOException {
        java.io.ByteArrayOutputStream read = new java.io.ByteArrayOutputStream();
        byte[] buffer = new byte[8192];
        try {
            for (int n; (n = in.read(buffer)) >= 0; ) {
                read.write(buffer, 0, n);
            }
        } catch (java.net.SocketException reset) {
            if (!read.toString(StandardCharsets.ISO_8859_1).contains("\r\n\r\n")) {
                throw reset;
            }
        }
        return read.toString(StandardCharsets.ISO_8859_1);
    }
}
