package dev.idempotency.server;

import dev.idempotency.testsupport.Http;
import io.micronaut.context.ApplicationContext;
import io.micronaut.context.annotation.Property;
import io.micronaut.context.annotation.Requires;
import io.micronaut.http.HttpRequest;
import io.micronaut.http.MediaType;
import io.micronaut.http.annotation.Body;
import io.micronaut.http.annotation.Controller;
import io.micronaut.http.annotation.Delete;
import io.micronaut.http.annotation.Get;
import io.micronaut.http.annotation.Part;
import io.micronaut.http.annotation.PathVariable;
import io.micronaut.http.annotation.Post;
import io.micronaut.http.annotation.Put;
import io.micronaut.http.client.HttpClient;
import io.micronaut.http.client.annotation.Client;
import io.micronaut.http.client.multipart.MultipartBody;
import io.micronaut.http.multipart.CompletedFileUpload;
import io.micronaut.runtime.server.EmbeddedServer;
import io.micronaut.test.extensions.junit5.annotation.MicronautTest;
import jakarta.inject.Inject;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.DisplayName;
import org.junit.jupiter.api.Test;

import java.io.IOException;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.util.Map;
import java.util.UUID;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicInteger;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/**
 * The retries real senders make (CONTRACT S1, S2, S4, S6, S7): multipart uploads whose boundary
 * changes with every send, {@code @Idempotent} on PUT and DELETE, keys from a webhook sender's own
 * header or from a JSON body member, and an operation name that outlives its route's path.
 */
@MicronautTest
@Property(name = "spec.name", value = "RealSendersTest")
class RealSendersTest {

    @Inject
    EmbeddedServer server;
    @Inject
    Api api;
    @Inject
    @Client("/")
    HttpClient client;

    Http http;

    @BeforeEach
    void setUp() {
        http = new Http(server.getURI());
    }

    private static String key() {
        return "\"" + UUID.randomUUID() + "\"";
    }

    private static final byte[] PNG = {(byte) 0x89, 'P', 'N', 'G', '\r', '\n', 0x1a, '\n', 0, 0, 0, 13, 'I', 'H', 'D', 'R'};

    private static byte[] upload(String boundary, String purpose, byte[] file) {
        String head = "--" + boundary + "\r\nContent-Disposition: form-data; name=\"purpose\"\r\n\r\n" + purpose + "\r\n--"
            + boundary + "\r\nContent-Disposition: form-data; name=\"file\"; filename=\"receipt.png\"\r\n"
            + "Content-Type: image/png\r\n\r\n";
        byte[] tail = ("\r\n--" + boundary + "--\r\n").getBytes(StandardCharsets.ISO_8859_1);
        byte[] h = head.getBytes(StandardCharsets.ISO_8859_1);
        byte[] all = new byte[h.length + file.length + tail.length];
        System.arraycopy(h, 0, all, 0, h.length);
        System.arraycopy(file, 0, all, h.length, file.length);
        System.arraycopy(tail, 0, all, h.length + file.length, tail.length);
        return all;
    }

    private HttpResponse<byte[]> sendUpload(String key, String boundary, String purpose, byte[] file) {
        return http.post("/senders/files", key, "multipart/form-data; boundary=" + boundary, upload(boundary, purpose, file));
    }

    @Test
    @DisplayName("S7: an upload sent again under a new boundary (as curl -F and stripe-java do) is replayed, not 422")
    void multipartWithANewBoundaryReplays() {
        String key = key();
        int before = api.runs("files");
        HttpResponse<byte[]> first = sendUpload(key, "------------------------d74496d66958873e", "dispute_evidence", PNG);
        HttpResponse<byte[]> retry = sendUpload(key, "----WebKitFormBoundary7MA4YWxkTrZu0gW", "dispute_evidence", PNG);

        assertThat(first.statusCode()).isEqualTo(201);
        assertThat(retry.statusCode()).isEqualTo(201);
        assertThat(retry.headers().firstValue("Idempotent-Replayed")).hasValue("true");
        assertThat(retry.body()).isEqualTo(first.body());
        assertThat(api.runs("files")).isEqualTo(before + 1);
        assertThat(Http.body(first)).contains("\"bytes\":" + PNG.length).contains("dispute_evidence");
    }

    @Test
    @DisplayName("S7/S9: another file or another field under the same key is another request: 422")
    void anotherUploadUnderTheKeyIs422() {
        String key = key();
        assertThat(sendUpload(key, "a", "dispute_evidence", PNG).statusCode()).isEqualTo(201);
        byte[] other = PNG.clone();
        other[PNG.length - 1] = 'X';
        HttpResponse<byte[]> otherFile = sendUpload(key, "b", "dispute_evidence", other);
        HttpResponse<byte[]> otherField = sendUpload(key, "c", "identity_document", PNG);

        assertThat(otherFile.statusCode()).isEqualTo(422);
        assertThat(otherField.statusCode()).isEqualTo(422);
        assertThat(Http.body(otherFile)).contains("idempotency-key-reused");
    }

    @Test
    @DisplayName("S7: Micronaut's own client uploads twice with one key (a new boundary each send): one run, a replay")
    void micronautClientMultipart() {
        String key = key();
        int before = api.runs("files");
        MultipartBody body = MultipartBody.builder().addPart("purpose", "dispute_evidence")
            .addPart("file", "receipt.png", MediaType.IMAGE_PNG_TYPE, PNG).build();
        var first = client.toBlocking().exchange(HttpRequest.POST("/senders/files", body)
            .contentType(MediaType.MULTIPART_FORM_DATA_TYPE).header("Idempotency-Key", key), String.class);
        var again = client.toBlocking().exchange(HttpRequest.POST("/senders/files", MultipartBody.builder()
            .addPart("purpose", "dispute_evidence").addPart("file", "receipt.png", MediaType.IMAGE_PNG_TYPE, PNG).build())
            .contentType(MediaType.MULTIPART_FORM_DATA_TYPE).header("Idempotency-Key", key), String.class);

        assertThat(first.code()).isEqualTo(201);
        assertThat(again.code()).isEqualTo(201);
        assertThat(again.getHeaders().get("Idempotent-Replayed")).isEqualTo("true");
        assertThat(again.body()).isEqualTo(first.body());
        assertThat(api.runs("files")).isEqualTo(before + 1);
    }

    @Test
    @DisplayName("S7: streamed (chunked) uploads one after another on one keep-alive connection all run"
        + " (regression: the route started inside the last chunk's dispatch, and the next request hung)")
    void streamedUploadsOnOneConnection() {
        int before = api.runs("files");
        for (int i = 0; i < 12; i++) {
            var r = client.toBlocking().exchange(HttpRequest.POST("/senders/files", MultipartBody.builder()
                .addPart("purpose", "dispute_evidence").addPart("file", "receipt.png", MediaType.IMAGE_PNG_TYPE, PNG).build())
                .contentType(MediaType.MULTIPART_FORM_DATA_TYPE).header("Idempotency-Key", key()), String.class);
            assertThat(r.code()).isEqualTo(201);
        }
        assertThat(api.runs("files")).isEqualTo(before + 12);
    }

    @Test
    @DisplayName("S7/S8: a body that is not the multipart body its Content-Type says is 400 with what is wrong;"
        + " the key stays free")
    void malformedMultipartIs400() {
        String key = key();
        int before = api.runs("files");
        HttpResponse<byte[]> broken = http.post("/senders/files", key, "multipart/form-data; boundary=abc",
            "--abc\r\nContent-Disposition: form-data; name=\"purpose\"\r\n\r\nno end".getBytes(StandardCharsets.ISO_8859_1));
        HttpResponse<byte[]> noBoundary = http.post("/senders/files", key, "multipart/form-data",
            upload("abc", "dispute_evidence", PNG));

        assertThat(broken.statusCode()).isEqualTo(400);
        assertThat(Http.body(broken)).contains("idempotency-body-unreadable").contains("ends inside part 1");
        assertThat(noBoundary.statusCode()).isEqualTo(400);
        assertThat(Http.body(noBoundary)).contains("boundary parameter");
        assertThat(api.runs("files")).isEqualTo(before);
        assertThat(sendUpload(key, "abc", "dispute_evidence", PNG).statusCode()).isEqualTo(201);
    }

    @Test
    @DisplayName("S1/S2: @Idempotent on a PUT or DELETE method covers it, though idempotency.methods is POST, PATCH")
    void explicitPutAndDeleteAreCovered() {
        String key = key();
        HttpResponse<byte[]> put = http.send("PUT", "/senders/things/7", key, "application/json",
            "{\"colour\":\"red\"}".getBytes(StandardCharsets.UTF_8));
        HttpResponse<byte[]> putAgain = http.send("PUT", "/senders/things/7", key, "application/json",
            "{\"colour\":\"red\"}".getBytes(StandardCharsets.UTF_8));
        HttpResponse<byte[]> putWithoutKey = http.send("PUT", "/senders/things/7", null, "application/json",
            "{\"colour\":\"red\"}".getBytes(StandardCharsets.UTF_8));
        String deleteKey = key();
        HttpResponse<byte[]> delete = http.send("DELETE", "/senders/things/7", deleteKey, null, null);
        HttpResponse<byte[]> deleteAgain = http.send("DELETE", "/senders/things/7", deleteKey, null, null);

        assertThat(put.statusCode()).isEqualTo(200);
        assertThat(putAgain.headers().firstValue("Idempotent-Replayed")).hasValue("true");
        assertThat(putWithoutKey.statusCode()).isEqualTo(400);
        assertThat(Http.body(putWithoutKey)).contains("idempotency-key-missing");
        assertThat(api.runs("put")).isEqualTo(1);
        assertThat(delete.statusCode()).isEqualTo(200);
        assertThat(deleteAgain.headers().firstValue("Idempotent-Replayed")).hasValue("true");
        assertThat(api.runs("delete")).isEqualTo(1);
    }

    @Test
    @DisplayName("S1: a class-level @Idempotent covers only the configured methods; its PUT runs as it is")
    void classLevelFollowsTheMethodSet() {
        String key = key();
        HttpResponse<byte[]> first = http.send("PUT", "/senders-class/7", key, "application/json",
            "{}".getBytes(StandardCharsets.UTF_8));
        HttpResponse<byte[]> second = http.send("PUT", "/senders-class/7", key, "application/json",
            "{}".getBytes(StandardCharsets.UTF_8));

        assertThat(first.statusCode()).isEqualTo(200);
        assertThat(second.headers().firstValue("Idempotent-Replayed")).isEmpty();
        assertThat(api.runs("class-put")).isEqualTo(2);
        assertThat(http.post("/senders-class", key(), "application/json", "{}".getBytes(StandardCharsets.UTF_8))
            .statusCode()).isEqualTo(200);
    }

    @Test
    @DisplayName("S2: @Idempotent on a GET method stops the startup, naming the route and the method")
    void explicitGetRefusesToStart() {
        assertThatThrownBy(() -> ApplicationContext.run(EmbeddedServer.class,
                Map.of("spec.name", "RealSendersTest.badGet", "micronaut.server.port", "-1")).close())
            .hasStackTraceContaining("@Idempotent on GET /bad-get/{id} (BadGet.read)")
            .hasStackTraceContaining("GET is safe by definition");
    }

    @Test
    @DisplayName("S4: a webhook redelivered under its webhook-id runs once; without the header: 400 naming it")
    void webhookIdHeader() {
        String delivery = "msg_2KWPBgLlAfxdpx2AI54pPJ85f4W";
        String event = "{\"type\":\"invoice.paid\",\"data\":{\"id\":\"in_1\"}}";
        HttpResponse<byte[]> first = http.post("/senders/webhooks", null, "application/json",
            event.getBytes(StandardCharsets.UTF_8), "webhook-id", delivery);
        HttpResponse<byte[]> redelivery = http.post("/senders/webhooks", null, "application/json",
            event.getBytes(StandardCharsets.UTF_8), "webhook-id", delivery);
        HttpResponse<byte[]> none = http.post("/senders/webhooks", key(), "application/json",
            event.getBytes(StandardCharsets.UTF_8));
        HttpResponse<byte[]> raw = http.post("/senders/webhooks", null, "application/json",
            event.getBytes(StandardCharsets.UTF_8), "webhook-id", "a \"raw\" id, with commas");

        assertThat(first.statusCode()).isEqualTo(204);
        assertThat(redelivery.statusCode()).isEqualTo(204);
        assertThat(redelivery.headers().firstValue("Idempotent-Replayed")).hasValue("true");
        assertThat(none.statusCode()).isEqualTo(400);
        assertThat(Http.body(none)).contains("idempotency-key-missing").contains("webhook-id header");
        assertThat(raw.statusCode()).as("a raw header value is the key as it is, no sf-string parsing").isEqualTo(204);
        assertThat(api.runs("webhooks")).isEqualTo(2);
    }

    @Test
    @DisplayName("S4: a key in a JSON body member replays, answers 422 for another payload, 400 without the member")
    void bodyMemberKey() {
        String k = UUID.randomUUID().toString();
        String body = "{\"idempotency_key\":\"" + k + "\",\"amount_money\":{\"amount\":100,\"currency\":\"USD\"}}";
        String reordered = "{\"amount_money\":{\"currency\":\"USD\",\"amount\":100.0},\"idempotency_key\":\"" + k + "\"}";
        HttpResponse<byte[]> first = http.postJson("/senders/square-payments", null, body);
        HttpResponse<byte[]> retry = http.postJson("/senders/square-payments", null, reordered);
        HttpResponse<byte[]> other = http.postJson("/senders/square-payments", null,
            "{\"idempotency_key\":\"" + k + "\",\"amount_money\":{\"amount\":999,\"currency\":\"USD\"}}");
        HttpResponse<byte[]> missing = http.postJson("/senders/square-payments", key(), "{\"amount_money\":{}}");
        HttpResponse<byte[]> notString = http.postJson("/senders/square-payments", null, "{\"idempotency_key\":42}");
        HttpResponse<byte[]> tooLong = http.postJson("/senders/square-payments", null,
            "{\"idempotency_key\":\"" + "x".repeat(300) + "\"}");

        assertThat(first.statusCode()).isEqualTo(200);
        assertThat(retry.headers().firstValue("Idempotent-Replayed")).hasValue("true");
        assertThat(retry.body()).isEqualTo(first.body());
        assertThat(other.statusCode()).isEqualTo(422);
        assertThat(missing.statusCode()).isEqualTo(400);
        assertThat(Http.body(missing)).contains("idempotency-key-missing").contains("/idempotency_key");
        assertThat(notString.statusCode()).isEqualTo(400);
        assertThat(Http.body(notString)).contains("idempotency-key-invalid").contains("must be a string");
        assertThat(tooLong.statusCode()).isEqualTo(400);
        assertThat(Http.body(tooLong)).contains("idempotency-key-invalid").doesNotContain("xxxx");
        assertThat(api.runs("square")).isEqualTo(1);
    }

    @Test
    @DisplayName("S6: two routes that name one operation share its keys: a retry on the renamed path replays")
    void operationNameOutlivesThePath() {
        String key = key();
        HttpResponse<byte[]> onOld = http.postJson("/senders/v1/payments", key, "{\"amount\":100}");
        HttpResponse<byte[]> onNew = http.postJson("/senders/v2/payments", key, "{\"amount\":100}");

        assertThat(onOld.statusCode()).isEqualTo(201);
        assertThat(onNew.headers().firstValue("Idempotent-Replayed")).hasValue("true");
        assertThat(onNew.body()).isEqualTo(onOld.body());
        assertThat(api.runs("payments")).isEqualTo(1);
    }

    @Requires(property = "spec.name", value = "RealSendersTest")
    @Controller("/senders")
    static class Api {
        private final Map<String, AtomicInteger> runs = new ConcurrentHashMap<>();

        int runs(String route) {
            return runs.computeIfAbsent(route, r -> new AtomicInteger()).get();
        }

        private int ran(String route) {
            return runs.computeIfAbsent(route, r -> new AtomicInteger()).incrementAndGet();
        }

        @Post(value = "/files", consumes = MediaType.MULTIPART_FORM_DATA)
        @Idempotent
        io.micronaut.http.HttpResponse<Map<String, Object>> file(@Part("purpose") String purpose,
                                                                  @Part("file") CompletedFileUpload file) throws IOException {
            return io.micronaut.http.HttpResponse.created(Map.of("id", "file_" + ran("files"), "purpose", purpose,
                "bytes", file.getBytes().length, "filename", file.getFilename()));
        }

        @Put("/things/{id}")
        @Idempotent
        Map<String, Object> put(@PathVariable String id, @Body Map<String, Object> body) {
            return Map.of("id", id, "version", ran("put"));
        }

        @Delete("/things/{id}")
        @Idempotent
        Map<String, Object> delete(@PathVariable String id) {
            return Map.of("id", id, "deleted", ran("delete"));
        }

        @Post("/webhooks")
        @Idempotent(keyHeader = "webhook-id")
        io.micronaut.http.HttpResponse<Void> webhook(@Body Map<String, Object> event) {
            ran("webhooks");
            return io.micronaut.http.HttpResponse.noContent();
        }

        @Post("/square-payments")
        @Idempotent(keyPointer = "/idempotency_key")
        Map<String, Object> square(@Body Map<String, Object> body) {
            return Map.of("payment", Map.of("id", "sq_" + ran("square")));
        }

        @Post("/v1/payments")
        @Idempotent(operation = "payments.create")
        io.micronaut.http.HttpResponse<Map<String, Object>> paymentsV1(@Body Map<String, Object> body) {
            return io.micronaut.http.HttpResponse.created(Map.of("id", "pay_" + ran("payments")));
        }

        @Post("/v2/payments")
        @Idempotent(operation = "payments.create")
        io.micronaut.http.HttpResponse<Map<String, Object>> paymentsV2(@Body Map<String, Object> body) {
            return io.micronaut.http.HttpResponse.created(Map.of("id", "pay_" + ran("payments")));
        }
    }

    @Requires(property = "spec.name", value = "RealSendersTest")
    @Controller("/senders-class")
    @Idempotent
    static class ClassLevel {
        private final Api api;

        ClassLevel(Api api) {
            this.api = api;
        }

        @Put("/{id}")
        Map<String, Object> put(@PathVariable String id, @Body Map<String, Object> body) {
            return Map.of("id", id, "run", api.ran("class-put"));
        }

        @Post
        Map<String, Object> post(@Body Map<String, Object> body) {
            return Map.of("ok", true);
        }
    }

    @Requires(property = "spec.name", value = "RealSendersTest.badGet")
    @Controller("/bad-get")
    static class BadGet {
        @Get("/{id}")
        @Idempotent
        String read(@PathVariable String id) {
            return id;
        }
    }
}
