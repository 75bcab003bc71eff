package dev.idempotency.server;

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
 * A byte-exact HTTP client for the filter tests: {@link java.net.http.HttpClient} for ordinary
 * requests, and a raw socket for header bytes that well-behaved clients refuse to send.
 */
final class Http {

    private static final HttpClient CLIENT = HttpClient.newBuilder()
        .version(HttpClient.Version.HTTP_1_1)
        .connectTimeout(Duration.ofSeconds(5))
        .build();

    private final URI base;

    Http(URI base) {
        this.base = base;
    }

    HttpResponse<byte[]> post(String path, String key, String contentType, byte[] body, String... headers) {
        return send("POST", path, key, contentType, body, headers);
    }

    HttpResponse<byte[]> postJson(String path, String key, String json, String... headers) {
        return post(path, key, "application/json", json.getBytes(StandardCharsets.UTF_8), headers);
    }

    HttpResponse<byte[]> send(String method, String path, String key, String contentType, byte[] body,
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

    /** A raw response: status line and header lines, undecoded. */
    record Raw(int status, List<String> headerLines, String body) {
    }

    /** Sends a POST whose Idempotency-Key header lines are given as raw ISO-8859-1 bytes. */
    Raw rawPost(String path, List<byte[]> keyHeaderValues) {
        try (Socket socket = new Socket(base.getHost(), base.getPort())) {
            socket.setSoTimeout(10_000);
            OutputStream out = socket.getOutputStream();
            StringBuilder head = new StringBuilder("POST " + path + " HTTP/1.1\r\nHost: localhost\r\n"
                + "Content-Type: application/json\r\nContent-Length: 2\r\nConnection: close\r\n");
            out.write(head.toString().getBytes(StandardCharsets.ISO_8859_1));
            for (byte[] v : keyHeaderValues) {
                out.write("Idempotency-Key: ".getBytes(StandardCharsets.ISO_8859_1));
                out.write(v);
                out.write("\r\n".getBytes(StandardCharsets.ISO_8859_1));
            }
            out.write("\r\n{}".getBytes(StandardCharsets.ISO_8859_1));
            out.flush();
            InputStream in = socket.getInputStream();
            String text = new String(in.readAllBytes(), StandardCharsets.ISO_8859_1);
            int split = text.indexOf("\r\n\r\n");
            String[] lines = text.substring(0, split).split("\r\n");
            int status = Integer.parseInt(lines[0].split(" ")[1]);
            List<String> headerLines = new ArrayList<>(List.of(lines).subList(1, lines.length));
            return new Raw(status, headerLines, text.substring(split + 4));
        } catch (IOException e) {
            throw new IllegalStateException(e);
        }
    }
}
