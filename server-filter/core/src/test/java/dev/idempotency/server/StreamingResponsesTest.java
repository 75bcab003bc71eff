package dev.idempotency.server;

import dev.idempotency.testsupport.Await;
import dev.idempotency.testsupport.Http;
import io.micronaut.context.annotation.Property;
import io.micronaut.runtime.server.EmbeddedServer;
import io.micronaut.test.extensions.junit5.annotation.MicronautTest;
import jakarta.inject.Inject;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.DisplayName;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

import java.io.InputStream;
import java.io.OutputStream;
import java.net.Socket;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.UUID;
import java.util.concurrent.TimeUnit;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * Streamed and asynchronous responses (CONTRACT S15, S13): a {@code Publisher} of text, JSON
 * items, server-sent events or raw chunks, a {@code CompletableFuture} and a {@code Mono} are
 * sent as the server itself would send them, and replayed byte for byte; a stream over the
 * stored-body cap is sent whole and replayed as omitted; a stream that fails or is abandoned
 * releases its key; reactive routes run on the event loop.
 */
@MicronautTest
@Property(name = "spec.name", value = "StreamingResponsesTest")
@Property(name = "idempotency.max-stored-body-size", value = "4096")
@Property(name = "idempotency.lease", value = "2s")
class StreamingResponsesTest {

    @Inject
    EmbeddedServer server;
    @Inject
    ReactiveApi api;

    Http http;

    @BeforeEach
    void setUp() {
        http = new Http(server.getURI());
    }

    private static String key() {
        return "\"" + UUID.randomUUID() + "\"";
    }

    @ParameterizedTest(name = "S13/S15: /rx/{0}: the original is what the server sends without the filter, the replay the same bytes")
    @ValueSource(strings = {"text", "json", "sse", "bytes", "future", "mono"})
    void replayedByteForByte(String route) {
        String path = "/rx/" + route + "?n=5";
        HttpResponse<byte[]> unprotected = http.postJson(path, null, "{}");
        assertThat(unprotected.statusCode()).isBetween(200, 201);
        assertThat(unprotected.body()).isNotEmpty();

        String k = key();
        int before = api.calls(route);
        HttpResponse<byte[]> original = http.postJson(path, k, "{}");
        HttpResponse<byte[]> replay = http.postJson(path, k, "{}");
        assertThat(api.calls(route)).isEqualTo(before + 1);

        assertThat(original.statusCode()).isEqualTo(unprotected.statusCode());
        assertThat(original.body()).isEqualTo(unprotected.body());
        assertThat(original.headers().firstValue("Content-Type")).isEqualTo(unprotected.headers().firstValue("Content-Type"));
        assertThat(original.headers().firstValue("Idempotent-Replayed")).isEmpty();

        assertThat(replay.statusCode()).isEqualTo(original.statusCode());
        assertThat(replay.body()).isEqualTo(original.body());
        assertThat(replay.headers().firstValue("Content-Type")).isEqualTo(original.headers().firstValue("Content-Type"));
        assertThat(replay.headers().firstValue("Idempotent-Replayed")).hasValue("true");
        assertThat(replay.headers().firstValue("Idempotency-Replay")).isEmpty();
    }

    @Test
    @DisplayName("S15: the JSON stream is framed as one array, SSE as events, exactly as without the filter")
    void framing() {
        String k = key();
        assertThat(Http.body(http.postJson("/rx/json?n=2", k, "{}")))
            .isEqualTo("[{\"index\":0,\"name\":\"item \u00e9 0\",\"price\":0.0},{\"index\":1,\"name\":\"item \u00e9 1\",\"price\":1.5}]");
        assertThat(Http.body(http.postJson("/rx/json?n=0", key(), "{}"))).isEqualTo("[]");
        String sse = Http.body(http.postJson("/rx/sse?n=1", key(), "{}"));
        assertThat(sse).contains("data: {\"index\":0").contains("id: 0").contains("event: item");
    }

    @Test
    @DisplayName("S15: a stream over the stored-body cap reaches the client whole; the handler runs once and its replay is omitted")
    void largeStreamOmitted() {
        String k = key();
        int before = api.calls("json");
        HttpResponse<byte[]> original = http.postJson("/rx/json?n=400", k, "{}");
        assertThat(original.body().length).isGreaterThan(4096);
        assertThat(Http.body(original)).startsWith("[{\"index\":0").endsWith("\"price\":598.5}]");
        HttpResponse<byte[]> replay = http.postJson("/rx/json?n=400", k, "{}");
        assertThat(replay.statusCode()).isEqualTo(200);
        assertThat(replay.body()).isEmpty();
        assertThat(replay.headers().firstValue("Idempotent-Replayed")).hasValue("true");
        assertThat(replay.headers().firstValue("Idempotency-Replay")).hasValue("omitted");
        assertThat(api.calls("json")).isEqualTo(before + 1);
    }

    @Test
    @DisplayName("S14/S15: a stream that fails after its first items releases the key: the retry runs again")
    void failingStreamReleases() throws Exception {
        String k = key();
        int before = api.calls("failing");
        try {
            http.postJson("/rx/failing", k, "{}");
        } catch (IllegalStateException e) {
            // the connection is cut after the first chunks: the client sees a broken body
        }
        awaitCalls("failing", before + 1);
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(10);
        while (api.calls("failing") < before + 2 && System.nanoTime() < deadline) {
            try {
                http.postJson("/rx/failing", k, "{}");
            } catch (IllegalStateException e) {
                // broken again, as expected
            }
            Thread.sleep(20);
        }
        assertThat(api.calls("failing")).isEqualTo(before + 2);
    }

    @Test
    @DisplayName("S14/S15: a stream that fails before its first item is an error response, and the key is released")
    void failingBeforeFirstItem() {
        String k = key();
        int before = api.calls("failing-first");
        HttpResponse<byte[]> first = http.postJson("/rx/failing-first", k, "{}");
        assertThat(first.statusCode()).isEqualTo(500);
        assertThat(first.headers().firstValue("Idempotent-Replayed")).isEmpty();
        HttpResponse<byte[]> retry = http.postJson("/rx/failing-first", k, "{}");
        assertThat(retry.statusCode()).isEqualTo(500);
        assertThat(api.calls("failing-first")).isEqualTo(before + 2);
    }

    @Test
    @DisplayName("S12/S15: while an event stream flows its key is held (409, lease kept past its length); "
        + "a client that goes away releases it")
    void abandonedStreamReleases() throws Exception {
        String k = key();
        int before = api.calls("endless");
        try (Socket socket = open("/rx/endless", k)) {
            InputStream in = socket.getInputStream();
            assertThat(readSome(in)).startsWith("HTTP/1.1 200");
            Thread.sleep(2_500); // longer than the 2 s lease: it is renewed while the stream flows
            HttpResponse<byte[]> duplicate = http.postJson("/rx/endless", k, "{}");
            assertThat(duplicate.statusCode()).isEqualTo(409);
        }
        // the client is gone; the stream is cancelled and the key released, so a retry runs again
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(10);
        while (api.calls("endless") < before + 2 && System.nanoTime() < deadline) {
            try (Socket retry = open("/rx/endless", k)) {
                readSome(retry.getInputStream());
            }
            Thread.sleep(50);
        }
        assertThat(api.calls("endless")).isEqualTo(before + 2);
    }

    @Test
    @DisplayName("S17: routes without @ExecuteOn keep running on the event loop under the filter")
    void reactiveRoutesOnTheEventLoop() {
        http.postJson("/rx/text", key(), "{}");
        http.postJson("/rx/mono", key(), "{}");
        assertThat(api.threads.get("text")).containsIgnoringCase("eventloop");
        assertThat(api.threads.get("mono")).containsIgnoringCase("eventloop");
    }

    private void awaitCalls(String route, int calls) throws InterruptedException {
        Await.until(calls + " calls of " + route, Duration.ofSeconds(10), () -> api.calls(route) >= calls);
    }

    private Socket open(String path, String key) throws Exception {
        Socket socket = new Socket(server.getHost(), server.getPort());
        socket.setSoTimeout(10_000);
        OutputStream out = socket.getOutputStream();
        out.write(("POST " + path + " HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\n"
            + "Idempotency-Key: " + key + "\r\nContent-Length: 2\r\n\r\n{}").getBytes(StandardCharsets.ISO_8859_1));
        out.flush();
        return socket;
    }

    private static String readSome(InputStream in) throws Exception {
        byte[] buf = new byte[512];
        int n = in.read(buf);
        return n <= 0 ? "" : new String(buf, 0, n, StandardCharsets.ISO_8859_1);
    }
}
