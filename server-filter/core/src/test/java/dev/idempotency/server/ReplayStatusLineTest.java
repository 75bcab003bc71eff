package dev.idempotency.server;

import io.micronaut.context.annotation.Property;
import io.micronaut.context.annotation.Requires;
import io.micronaut.http.HttpResponse;
import io.micronaut.http.HttpStatus;
import io.micronaut.http.annotation.Body;
import io.micronaut.http.annotation.Controller;
import io.micronaut.http.annotation.Post;
import io.micronaut.runtime.server.EmbeddedServer;
import io.micronaut.test.extensions.junit5.annotation.MicronautTest;
import jakarta.inject.Inject;
import org.junit.jupiter.api.DisplayName;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

import java.io.ByteArrayOutputStream;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.Socket;
import java.nio.charset.StandardCharsets;
import java.util.Map;
import java.util.UUID;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * A replay's status line is the original's, reason phrase included (CONTRACT S13), whatever way
 * the route made its status: a returned object, {@code HttpResponse.ok(..)}, {@code created},
 * a status without a body, a reason of its own. Read off the wire, as a client sees it.
 */
@MicronautTest
@Property(name = "spec.name", value = "ReplayStatusLineTest")
class ReplayStatusLineTest {

    @Inject
    EmbeddedServer server;

    @ParameterizedTest(name = "{0}")
    @ValueSource(strings = {"/status/object", "/status/ok", "/status/created", "/status/accepted", "/status/own-reason",
        "/status/no-content"})
    @DisplayName("S13: a replay's status line equals the original's")
    void replayKeepsTheStatusLine(String path) throws Exception {
        String key = "\"" + UUID.randomUUID() + "\"";
        String original = statusLine(post(path, key));
        String replay = post(path, key);
        assertThat(replay).contains("Idempotent-Replayed: true");
        assertThat(statusLine(replay)).isEqualTo(original);
    }

    private String post(String path, String key) throws Exception {
        try (Socket socket = new Socket(server.getHost(), server.getPort())) {
            socket.setSoTimeout(10_000);
            OutputStream out = socket.getOutputStream();
            out.write(("POST " + path + " HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\n"
                + "Connection: close\r\nIdempotency-Key: " + key + "\r\nContent-Length: 2\r\n\r\n{}")
                .getBytes(StandardCharsets.ISO_8859_1));
            out.flush();
            InputStream in = socket.getInputStream();
            ByteArrayOutputStream all = new ByteArrayOutputStream();
            in.transferTo(all);
            return all.toString(StandardCharsets.ISO_8859_1);
        }
    }

    private static String statusLine(String response) {
        return response.substring(0, response.indexOf("\r\n"));
    }

    @Requires(property = "spec.name", value = "ReplayStatusLineTest")
    @Controller("/status")
    @Idempotent
    static class Api {

        @Post("/object")
        Map<String, String> object(@Body Map<String, Object> body) {
            return Map.of("made", "object");
        }

        @Post("/ok")
        HttpResponse<Map<String, String>> ok(@Body Map<String, Object> body) {
            return HttpResponse.ok(Map.of("made", "ok"));
        }

        @Post("/created")
        HttpResponse<Map<String, String>> created(@Body Map<String, Object> body) {
            return HttpResponse.created(Map.of("made", "created"));
        }

        @Post("/accepted")
        HttpResponse<Void> accepted(@Body Map<String, Object> body) {
            return HttpResponse.accepted();
        }

        @Post("/own-reason")
        HttpResponse<Map<String, String>> ownReason(@Body Map<String, Object> body) {
            return HttpResponse.<Map<String, String>>status(HttpStatus.OK, "Fine Thanks").body(Map.of("made", "reason"));
        }

        @Post("/no-content")
        HttpResponse<Void> noContent(@Body Map<String, Object> body) {
            return HttpResponse.noContent();
        }
    }
}
