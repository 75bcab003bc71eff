package dev.idempotency.examples.payments;

import io.micronaut.core.type.Argument;
import io.micronaut.json.JsonMapper;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.UUID;

/**
 * The tests' HTTP client: {@link java.net.http.HttpClient}, so the tests see the bytes and
 * headers exactly as a client on the wire does, plus JSON decoding through the app's mapper.
 */
final class Api {

    private static final HttpClient CLIENT = HttpClient.newBuilder()
        .version(HttpClient.Version.HTTP_1_1)
        .connectTimeout(Duration.ofSeconds(5))
        .build();

    private final URI base;
    private final JsonMapper json;

    Api(URI base, JsonMapper json) {
        this.base = base;
        this.json = json;
    }

    /** @return a fresh key in the sf-string form the contract recommends: {@code "<uuid>"} */
    static String newKey() {
        return "\"" + UUID.randomUUID() + "\"";
    }

    HttpResponse<byte[]> post(String path, String key, String jsonBody, String... headers) {
        return send("POST", path, key, jsonBody, headers);
    }

    HttpResponse<byte[]> patch(String path, String key, String jsonBody, String... headers) {
        return send("PATCH", path, key, jsonBody, headers);
    }

    HttpResponse<byte[]> get(String path, String... headers) {
        return send("GET", path, null, null, headers);
    }

    HttpResponse<byte[]> send(String method, String path, String key, String jsonBody, String... headers) {
        HttpRequest.Builder b = HttpRequest.newBuilder(base.resolve(path))
            .timeout(Duration.ofSeconds(30))
            .method(method, jsonBody == null ? HttpRequest.BodyPublishers.noBody()
                : HttpRequest.BodyPublishers.ofString(jsonBody, StandardCharsets.UTF_8));
        if (key != null) {
            b.header("Idempotency-Key", key);
        }
        if (jsonBody != null) {
            b.header("Content-Type", "application/json");
        }
        for (int i = 0; i < headers.length; i += 2) {
            b.header(headers[i], headers[i + 1]);
        }
        try {
            return CLIENT.send(b.build(), HttpResponse.BodyHandlers.ofByteArray());
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new IllegalStateException(e);
        }
    }

    <T> T read(HttpResponse<byte[]> response, Class<T> type) {
        try {
            return json.readValue(response.body(), Argument.of(type));
        } catch (IOException e) {
            throw new UncheckedIOException("cannot read " + new String(response.body(), StandardCharsets.UTF_8), e);
        }
    }

    SideEffectLedger.Stats stats() {
        return read(get("/stats"), SideEffectLedger.Stats.class);
    }

    static String text(HttpResponse<byte[]> response) {
        return new String(response.body(), StandardCharsets.UTF_8);
    }

    static boolean replayed(HttpResponse<byte[]> response) {
        return response.headers().firstValue("Idempotent-Replayed").filter("true"::equals).isPresent();
    }
}
