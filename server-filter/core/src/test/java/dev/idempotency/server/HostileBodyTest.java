package dev.idempotency.server;

import ch.qos.logback.classic.Level;
import ch.qos.logback.classic.spi.ILoggingEvent;
import dev.idempotency.testsupport.Await;
import dev.idempotency.testsupport.Http;
import dev.idempotency.testsupport.LogCapture;
import dev.idempotency.server.http.IdempotencyFilter;
import io.micronaut.context.annotation.Property;
import io.micronaut.context.annotation.Requires;
import io.micronaut.http.annotation.Body;
import io.micronaut.http.annotation.Controller;
import io.micronaut.http.annotation.Post;
import io.micronaut.runtime.server.EmbeddedServer;
import io.micronaut.test.extensions.junit5.annotation.MicronautTest;
import jakarta.inject.Inject;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.DisplayName;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.slf4j.Logger;

import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.OutputStream;
import java.net.Socket;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.UUID;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.zip.Deflater;
import java.util.zip.DeflaterOutputStream;
import java.util.zip.GZIPOutputStream;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * Hostile and broken request bodies (CONTRACT S8): whatever a body does while it is read or
 * decompressed, the answer is a 4xx problem decided before the store is touched, never a 500,
 * and the handler does not run. The server's own request limit here is 1 MiB, the filter's
 * fingerprint cap 64 KiB.
 */
@MicronautTest
@Property(name = "spec.name", value = "HostileBodyTest")
@Property(name = "idempotency.max-request-body-size", value = "65536")
@Property(name = "micronaut.server.max-request-size", value = "1048576")
class HostileBodyTest {

    @Inject
    EmbeddedServer server;
    @Inject
    Api api;

    Http http;
    /** Every logger's lines, at the tests' configured levels. */
    @RegisterExtension
    final LogCapture log = LogCapture.of(Logger.ROOT_LOGGER_NAME, Level.WARN);

    @Controller("/h")
    @Requires(property = "spec.name", value = "HostileBodyTest")
    static class Api {
        final AtomicInteger calls = new AtomicInteger();

        @Post("/protected")
        @Idempotent
        Map<String, Object> protectedRoute(@Body Map<String, Object> body) {
            return Map.of("n", calls.incrementAndGet(), "size", body.size());
        }

        @Post("/plain")
        Map<String, Object> plainRoute(@Body Map<String, Object> body) {
            return Map.of("size", body.size());
        }
    }

    @BeforeEach
    void setUp() {
        http = new Http(server.getURI());
    }

    private static String key() {
        return "\"" + UUID.randomUUID() + "\"";
    }

    /** {@code zeros} zero bytes inside a JSON string, compressed. */
    private static byte[] bomb(String encoding, int zeros) throws IOException {
        ByteArrayOutputStream out = new ByteArrayOutputStream();
        try (OutputStream z = encoding.equals("gzip") ? new GZIPOutputStream(out)
            : new DeflaterOutputStream(out, new Deflater(Deflater.BEST_COMPRESSION))) {
            z.write("{\"pad\":\"".getBytes(StandardCharsets.US_ASCII));
            byte[] block = new byte[65536];
            java.util.Arrays.fill(block, (byte) '0');
            for (int left = zeros; left > 0; left -= block.length) {
                z.write(block, 0, Math.min(left, block.length));
            }
            z.write("\"}".getBytes(StandardCharsets.US_ASCII));
        }
        return out.toByteArray();
    }

    @Test
    @DisplayName("S8: gzip and deflate bombs of several sizes, repeated with new keys, are 413, never 500; the handler never runs")
    void compressionBombs() throws IOException {
        Map<String, Integer> statuses = new TreeMap<>();
        for (String encoding : List.of("gzip", "deflate")) {
            for (int inflated : new int[] {200_000, 2_000_000, 20_000_000, 100_000_000}) {
                byte[] bomb = bomb(encoding, inflated);
                for (int attempt = 0; attempt < 4; attempt++) {
                    HttpResponse<byte[]> r = http.post("/h/protected", key(), "application/json", bomb,
                        "Content-Encoding", encoding);
                    statuses.merge(encoding + " " + inflated + " -> " + r.statusCode(), 1, Integer::sum);
                    assertThat(r.statusCode()).as("%s bomb inflating to %d bytes: %s", encoding, inflated, Http.body(r))
                        .isEqualTo(413);
                    assertThat(Http.body(r)).contains("\"code\":\"idempotency-body-too-large\"");
                }
            }
        }
        assertThat(api.calls).hasValue(0);
        assertThat(errors()).as("statuses %s", statuses).isEmpty();
    }

    @Test
    @DisplayName("S8: a compressed body is fingerprinted as what it inflates to: gzip then identity with one key is a replay")
    void compressedBodyFingerprintsInflated() throws IOException {
        String json = "{\"amount\":1000,\"currency\":\"EUR\"}";
        ByteArrayOutputStream out = new ByteArrayOutputStream();
        try (OutputStream z = new GZIPOutputStream(out)) {
            z.write(json.getBytes(StandardCharsets.UTF_8));
        }
        String k = key();
        HttpResponse<byte[]> first = http.post("/h/protected", k, "application/json", out.toByteArray(),
            "Content-Encoding", "gzip");
        HttpResponse<byte[]> second = http.postJson("/h/protected", k, json);
        assertThat(first.statusCode()).isEqualTo(200);
        assertThat(second.statusCode()).isEqualTo(200);
        assertThat(second.headers().firstValue("Idempotent-Replayed")).hasValue("true");
        assertThat(second.body()).isEqualTo(first.body());
    }

    @Test
    @DisplayName("S8: a body that does not decompress is 400 idempotency-body-unreadable, decided before the store: the key stays free")
    void undecodableBody() throws IOException {
        byte[] garbage = "this is not gzip at all".getBytes(StandardCharsets.US_ASCII);
        byte[] notDeflate = new byte[] {(byte) 0xff, (byte) 0xff, 1, 2, 3, 4, 5, 6, 7, 8};
        int before = api.calls.get();
        for (String encoding : List.of("gzip", "deflate")) {
            for (int attempt = 0; attempt < 3; attempt++) {
                String k = key();
                HttpResponse<byte[]> r = http.post("/h/protected", k, "application/json",
                    encoding.equals("gzip") ? garbage : notDeflate, "Content-Encoding", encoding);
                assertThat(r.statusCode()).as(Http.body(r)).isEqualTo(400);
                assertThat(r.headers().firstValue("Content-Type")).hasValue("application/problem+json");
                assertThat(Http.body(r)).contains("\"code\":\"idempotency-body-unreadable\"")
                    .contains("could not be decompressed");
                // nothing was stored under the key: the same key with a readable body runs, once
                HttpResponse<byte[]> ok = http.postJson("/h/protected", k, "{\"a\":1}");
                assertThat(ok.statusCode()).isEqualTo(200);
                assertThat(ok.headers().firstValue("Idempotent-Replayed")).isEmpty();
            }
        }
        assertThat(api.calls.get()).isEqualTo(before + 6);
        assertThat(errors()).isEmpty();
    }

    @Test
    @DisplayName("S8: a truncated compressed body never gets a 500: what inflated reaches the route, which answers for it")
    void truncatedCompressedBody() throws IOException {
        byte[] valid = bomb("gzip", 1000);
        byte[] truncated = java.util.Arrays.copyOf(valid, valid.length / 2);
        for (int attempt = 0; attempt < 3; attempt++) {
            HttpResponse<byte[]> r = http.post("/h/protected", key(), "application/json", truncated,
                "Content-Encoding", "gzip");
            assertThat(r.statusCode()).as(Http.body(r)).isBetween(400, 499);
        }
        assertThat(errors()).isEmpty();
    }

    @Test
    @DisplayName("S8: a client that aborts its upload is one DEBUG line without a stack trace; the handler does not run")
    void clientAbortIsNotAnError() throws Exception {
        try (LogCapture filterLog = LogCapture.of(IdempotencyFilter.LOG_CATEGORY, Level.DEBUG).start()) {
            int before = api.calls.get();
            for (int i = 0; i < 5; i++) {
                try (Socket socket = new Socket(server.getHost(), server.getPort())) {
                    OutputStream out = socket.getOutputStream();
                    out.write(("POST /h/protected HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\n"
                        + "Content-Length: 50000\r\nIdempotency-Key: " + key() + "\r\n\r\n{\"pad\":\"")
                        .getBytes(StandardCharsets.US_ASCII));
                    out.write(new byte[1000]);
                    out.flush();
                    Thread.sleep(50);
                } // closed mid-body
            }
            Await.until("five DEBUG lines for the aborted uploads", Duration.ofSeconds(5),
                () -> aborts(filterLog).size() >= 5);
            assertThat(aborts(filterLog)).hasSize(5).allSatisfy(e -> assertThat(e.getThrowableProxy()).isNull());
            assertThat(api.calls.get()).isEqualTo(before);
            assertThat(errors()).isEmpty();
        }
    }

    private static List<ILoggingEvent> aborts(LogCapture filterLog) {
        return filterLog.events().stream()
            .filter(e -> e.getLevel() == Level.DEBUG && e.getFormattedMessage().contains("before its body was read"))
            .toList();
    }

    private List<String> errors() {
        List<String> out = new ArrayList<>();
        for (ILoggingEvent e : log.events()) {
            if (e.getLevel().isGreaterOrEqual(Level.WARN) || e.getThrowableProxy() != null) {
                out.add(e.getLevel() + " " + e.getLoggerName() + ": " + e.getFormattedMessage()
                    + (e.getThrowableProxy() == null ? "" : " / " + e.getThrowableProxy().getClassName()));
            }
        }
        return out;
    }
}
