package dev.idempotency.openapi;

import dev.idempotency.server.internal.fingerprint.KeyHeader;
import dev.idempotency.server.internal.fingerprint.MalformedKeyException;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.DisplayName;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import java.util.regex.Pattern;
import java.util.stream.Stream;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * CONTRACT S21: sample applications compiled with the real processors (micronaut-inject-java,
 * micronaut-openapi and this module), and the OpenAPI document they produce.
 */
class IdempotencyOpenApiVisitorTest {

    private static final String CONTRACT = "https://idempotency.dev/contract/";

    /** Defaults: no configuration file; swagger annotations on the class path (the application uses some). */
    private static final String ORDERS = """
        package demo;

        import dev.idempotency.server.Idempotent;
        import io.micronaut.http.annotation.*;
        import io.swagger.v3.oas.annotations.Operation;
        import io.swagger.v3.oas.annotations.media.Content;
        import io.swagger.v3.oas.annotations.responses.ApiResponse;

        @Controller("/orders")
        class OrdersController {

            @Post
            @Idempotent
            String create(@Body String body) { return body; }

            @Patch("/{id}")
            @Idempotent(required = false, retention = "72h", lease = "10s", inFlightWait = "5s")
            String update(String id, @Body String body) { return body; }

            @Get("/{id}")
            @Idempotent
            String get(String id) { return id; }

            @Put("/{id}")
            @Idempotent
            String replace(String id, @Body String body) { return body; }

            @Post("/plain")
            String plain(@Body String body) { return body; }

            @Post("/{id}/capture")
            @Idempotent
            @Operation(summary = "Capture an order", description = "Captures the whole amount.")
            @ApiResponse(responseCode = "409", description = "Order already captured",
                content = @Content(mediaType = "application/problem+json"))
            String capture(String id) { return id; }

            @Post("/{id}/cancel")
            @Idempotent(failOpen = true)
            String cancel(String id) { return id; }

            @Post("/{id}/settle")
            @Idempotent(failOpen = true, transactional = true)
            String settle(String id) { return id; }

            @Post("/{id}/notes")
            @Idempotent
            String note(String id, @Header("Idempotency-Key") String key, @Body String body) { return key; }

            @Post("/webhooks")
            @Idempotent(keyHeader = "webhook-id")
            String hook(@Body String body) { return body; }

            @Post("/square")
            @Idempotent(keyPointer = "/idempotency_key", operation = "square.create")
            String square(@Body String body) { return body; }
        }
        """;

    private static final String REFUNDS = """
        package demo;

        import dev.idempotency.server.Idempotent;
        import io.micronaut.http.annotation.*;

        @Controller("/refunds")
        @Idempotent(retention = "1h")
        class RefundsController {

            @Post
            String create(@Body String body) { return body; }

            @Get
            String list() { return ""; }

            @Patch("/{id}")
            @Idempotent(required = false)
            String update(String id, @Body String body) { return body; }
        }
        """;

    /** Configured: application.properties and the methods option; no swagger annotations anywhere. */
    private static final String TRANSFERS = """
        package demo;

        import dev.idempotency.server.Idempotent;
        import io.micronaut.http.annotation.*;

        @Controller("/transfers")
        class TransfersController {

            @Post
            @Idempotent
            String create(@Body String body) { return body; }

            @Put("/{id}")
            @Idempotent
            String replace(String id, @Body String body) { return body; }

            @Patch("/{id}")
            @Idempotent
            String update(String id, @Body String body) { return body; }
        }

        @Controller("/batches")
        @Idempotent
        class BatchesController {

            @Put("/{id}")
            String replace(String id, @Body String body) { return body; }

            @Patch("/{id}")
            String update(String id, @Body String body) { return body; }
        }
        """;

    @TempDir
    static Path tmp;

    static Map<String, Object> defaults;
    static Map<String, Object> configured;
    static OpenApiCompilation.Result configuredResult;

    @BeforeAll
    static void compile() {
        OpenApiCompilation.Result d = OpenApiCompilation.in(tmp.resolve("defaults"))
            .source("demo.OrdersController", ORDERS)
            .source("demo.RefundsController", REFUNDS)
            .compile();
        assertThat(d.exitCode()).as(d.output()).isZero();
        defaults = d.document().orElseThrow(() -> new AssertionError("no document: " + d.output()));

        configuredResult = OpenApiCompilation.in(tmp.resolve("configured"))
            .source("demo.TransfersController", TRANSFERS)
            .applicationProperties("""
                idempotency.retention=48h
                idempotency.lease=45s
                idempotency.header-name=X-Request-Key
                idempotency.replayed-header-name=X-Replayed
                idempotency.contract-url=https://api.example.com/idempotency
                """)
            .withoutSwaggerAnnotations()
            .option("-A" + IdempotencyOpenApiVisitor.METHODS_OPTION + "=post, put")
            .compile();
        assertThat(configuredResult.exitCode()).as(configuredResult.output()).isZero();
        configured = configuredResult.document()
            .orElseThrow(() -> new AssertionError("no document: " + configuredResult.output()));
    }

    @Test
    @DisplayName("S21: an @Idempotent POST declares the Idempotency-Key header parameter, required, with the key's syntax")
    void headerParameter() {
        Map<String, Object> p = keyParameter(operation(defaults, "/orders", "post"), "Idempotency-Key");
        assertThat(p).containsEntry("in", "header").containsEntry("required", true);
        assertThat(map(p, "schema")).containsEntry("type", "string")
            .containsEntry("pattern", OperationAnnotations.KEY_PATTERN);
        assertThat((String) p.get("description"))
            .contains("RFC 9651 sf-string", "bare token", "1 to 255", "printable ASCII", "idempotency-key-missing",
                "24h", CONTRACT);
        assertThat(p.get("example")).isEqualTo("\"8e03978e-40d5-43e8-bc93-6894a57f9324\"");
    }

    @Test
    @DisplayName("S21: the filter's 400/409/413/422/503 answers are problem+json responses with the problem members and codes")
    void problemResponses() {
        Map<String, Object> responses = map(operation(defaults, "/orders", "post"), "responses");
        assertThat(responses).containsKeys("200", "400", "409", "413", "422", "503");
        assertProblem(responses, "400", "idempotency-key-missing", "idempotency-key-invalid",
            "idempotency-body-unreadable");
        assertProblem(responses, "409", "idempotency-request-in-progress");
        assertProblem(responses, "413", "idempotency-body-too-large");
        assertProblem(responses, "422", "idempotency-key-reused");
        assertProblem(responses, "503", "idempotency-store-unavailable");
        for (String status : List.of("409", "503")) {
            Map<String, Object> retryAfter = map(map(map(responses, status), "headers"), "Retry-After");
            assertThat(retryAfter).containsEntry("required", false); // the operation's own 409 has none
            assertThat(map(retryAfter, "schema")).containsEntry("type", "integer").containsEntry("minimum", 1);
        }
        for (String status : List.of("400", "413", "422")) {
            assertThat(map(responses, status)).doesNotContainKey("headers");
        }
        // the problem schema is defined once, under components
        Map<String, Object> schema = map(map(map(defaults, "components"), "schemas"), "IdempotencyProblem");
        assertThat(schema).containsEntry("type", "object");
        assertThat(list(schema, "required")).containsExactlyInAnyOrder("type", "title", "status", "detail", "code");
        Map<String, Object> properties = map(schema, "properties");
        assertThat(properties).containsOnlyKeys("type", "title", "status", "detail", "code");
        assertThat(map(properties, "type")).containsEntry("type", "string").containsEntry("format", "uri");
        assertThat(map(properties, "status")).containsEntry("type", "integer");
        // no enum: the operation may answer these statuses itself, with codes of its own
        assertThat(map(properties, "code")).doesNotContainKey("enum");
        assertThat((String) map(properties, "code").get("description")).contains("idempotency-key-reused",
            "idempotency-store-unavailable");
        // every example's detail is the text the filter sends (FilterProblemTest compares the texts)
        for (FilterProblem p : FilterProblem.values()) {
            Map<String, Object> value = map(map(map(map(map(map(responses, String.valueOf(p.status)), "content"),
                "application/problem+json"), "examples"), p.code), "value");
            assertThat(value).containsEntry("detail", p.detail("Idempotency-Key", "1048576"));
        }
        // the problem example's type is the contract page with the code as fragment
        Map<String, Object> example = map(map(map(map(map(map(responses, "422"), "content"), "application/problem+json"),
            "examples"), "idempotency-key-reused"), "value");
        assertThat(example).containsEntry("type", CONTRACT + "#idempotency-key-reused")
            .containsEntry("title", "Idempotency-Key reused with a different request")
            .containsEntry("status", 422).containsEntry("code", "idempotency-key-reused");
    }

    @Test
    @DisplayName("S21: x-idempotency publishes required, the header, retention and lease (the filter's defaults), the contract and the codes")
    void extensionDefaults() {
        Map<String, Object> x = map(operation(defaults, "/orders", "post"), "x-idempotency");
        assertThat(x).containsEntry("required", true)
            .containsEntry("header", "Idempotency-Key")
            .containsEntry("retention", "24h")
            .containsEntry("lease", "30s")
            .containsEntry("inFlightWait", "0s")
            .containsEntry("replayedHeader", "Idempotent-Replayed")
            .containsEntry("contract", CONTRACT);
        assertThat(map(x, "problems")).isEqualTo(Map.of(
            "idempotency-key-missing", 400, "idempotency-key-invalid", 400, "idempotency-body-unreadable", 400,
            "idempotency-request-in-progress", 409,
            "idempotency-body-too-large", 413, "idempotency-key-reused", 422, "idempotency-store-unavailable", 503));
    }

    @Test
    @DisplayName("S21: the annotation's members are published: optional key, its own retention, lease and in-flight wait")
    void annotationMembers() {
        Map<String, Object> op = operation(defaults, "/orders/{id}", "patch");
        assertThat(keyParameter(op, "Idempotency-Key")).containsEntry("required", false);
        assertThat(map(op, "x-idempotency")).containsEntry("required", false)
            .containsEntry("retention", "72h").containsEntry("lease", "10s").containsEntry("inFlightWait", "5s");
        assertThat(map(map(op, "x-idempotency"), "problems")).doesNotContainKey("idempotency-key-missing");
        // an optional key is never missing, but can still be invalid, and its body unreadable
        assertProblem(map(op, "responses"), "400", "idempotency-key-invalid", "idempotency-body-unreadable");
    }

    @Test
    @DisplayName("S21: GET and a POST without @Idempotent get none of it")
    void notIdempotent() {
        for (Map<String, Object> op : List.of(operation(defaults, "/orders/{id}", "get"),
            operation(defaults, "/orders/plain", "post"), operation(defaults, "/refunds", "get"))) {
            assertThat(op).doesNotContainKey("x-idempotency");
            assertThat(names(op)).doesNotContain("Idempotency-Key");
            assertThat(map(op, "responses")).containsOnlyKeys("200");
        }
    }

    @Test
    @DisplayName("S2/S21: @Idempotent on a PUT method is covered, whatever the configured methods")
    void explicitPutIsPublished() {
        Map<String, Object> put = operation(defaults, "/orders/{id}", "put");
        assertThat(map(put, "x-idempotency")).containsEntry("required", true);
        assertThat(keyParameter(put, "Idempotency-Key")).containsEntry("required", true);
    }

    @Test
    @DisplayName("S4/S6/S21: a key from another header or a body member, and an operation name, are published as such")
    void keySources() {
        Map<String, Object> hook = operation(defaults, "/orders/webhooks", "post");
        assertThat(keyParameter(hook, "webhook-id")).containsEntry("in", "header").containsEntry("required", true);
        assertThat(names(hook)).doesNotContain("Idempotency-Key");
        assertThat(map(map(hook, "x-idempotency"), "key")).containsEntry("in", "header")
            .containsEntry("name", "webhook-id").containsEntry("format", "raw");

        Map<String, Object> square = operation(defaults, "/orders/square", "post");
        assertThat(names(square)).doesNotContain("Idempotency-Key");
        assertThat(map(square, "x-idempotency")).containsEntry("operation", "square.create");
        assertThat(map(map(square, "x-idempotency"), "key")).containsEntry("in", "body")
            .containsEntry("pointer", "/idempotency_key");
    }

    @Test
    @DisplayName("S21: @Idempotent on the class covers its POST and PATCH, not its GET; method members win member by member")
    void classLevel() {
        Map<String, Object> create = operation(defaults, "/refunds", "post");
        assertThat(map(create, "x-idempotency")).containsEntry("required", true).containsEntry("retention", "1h");
        assertThat(keyParameter(create, "Idempotency-Key")).containsEntry("required", true);
        Map<String, Object> update = operation(defaults, "/refunds/{id}", "patch");
        assertThat(map(update, "x-idempotency")).containsEntry("required", false).containsEntry("retention", "1h");
        assertThat(operation(defaults, "/refunds", "get")).doesNotContainKey("x-idempotency");
    }

    @Test
    @DisplayName("S21: the operation's own 409 response and @Operation members are kept; the filter's 409 stays in x-idempotency")
    void ownResponseWins() {
        Map<String, Object> op = operation(defaults, "/orders/{id}/capture", "post");
        assertThat(op).containsEntry("summary", "Capture an order").containsEntry("description", "Captures the whole amount.");
        Map<String, Object> responses = map(op, "responses");
        assertThat(map(responses, "409")).containsEntry("description", "Order already captured").doesNotContainKey("headers");
        assertThat(responses).containsKeys("400", "413", "422", "503");
        assertThat(map(map(op, "x-idempotency"), "problems")).containsEntry("idempotency-request-in-progress", 409);
        assertThat(keyParameter(op, "Idempotency-Key")).containsEntry("required", true);
    }

    @Test
    @DisplayName("S21: a handler that binds the key header itself gets one parameter for it, not two")
    void handlerBindsTheHeader() {
        Map<String, Object> op = operation(defaults, "/orders/{id}/notes", "post");
        assertThat(names(op)).containsOnlyOnce("Idempotency-Key");
        assertThat(op).containsKey("x-idempotency");
        assertThat(map(op, "responses")).containsKeys("400", "409", "413", "422", "503");
    }

    @Test
    @DisplayName("S21: a route that fails open documents no 503, unless it is transactional (a failed commit is a 503)")
    void failOpen() {
        Map<String, Object> op = operation(defaults, "/orders/{id}/cancel", "post");
        assertThat(map(op, "responses")).containsKeys("400", "409", "413", "422").doesNotContainKey("503");
        assertThat(map(map(op, "x-idempotency"), "problems")).doesNotContainKey("idempotency-store-unavailable");
        Map<String, Object> transactional = operation(defaults, "/orders/{id}/settle", "post");
        assertThat(map(transactional, "responses")).containsKey("503");
    }

    @Test
    @DisplayName("S21: retention, lease, header names and contract URL come from the application's configuration when the annotation has none")
    void configuration() {
        Map<String, Object> op = operation(configured, "/transfers", "post");
        assertThat(map(op, "x-idempotency")).containsEntry("retention", "48h").containsEntry("lease", "45s")
            .containsEntry("header", "X-Request-Key").containsEntry("replayedHeader", "X-Replayed")
            .containsEntry("contract", "https://api.example.com/idempotency");
        assertThat(names(op)).contains("X-Request-Key").doesNotContain("Idempotency-Key");
        assertThat((String) keyParameter(op, "X-Request-Key").get("description"))
            .contains("48h", "X-Replayed: true", "https://api.example.com/idempotency");
        Map<String, Object> example = map(map(map(map(map(map(map(op, "responses"), "409"), "content"),
            "application/problem+json"), "examples"), "idempotency-request-in-progress"), "value");
        assertThat(example).containsEntry("type", "https://api.example.com/idempotency#idempotency-request-in-progress")
            .containsEntry("detail", FilterProblem.REQUEST_IN_PROGRESS.detail("X-Request-Key", "1048576"));
        assertThat(configuredResult.output()).doesNotContain("${");
    }

    @Test
    @DisplayName("S1/S21: the processor option micronaut.idempotency.openapi.methods follows idempotency.methods (here POST"
        + " and PUT, not PATCH) for class-level annotations; one on the method covers PATCH anyway")
    void methodsOption() {
        assertThat(operation(configured, "/batches/{id}", "put")).containsKey("x-idempotency");
        assertThat(operation(configured, "/batches/{id}", "patch")).doesNotContainKey("x-idempotency");
        assertThat(operation(configured, "/transfers/{id}", "put")).containsKey("x-idempotency");
        assertThat(operation(configured, "/transfers/{id}", "patch")).containsKey("x-idempotency");
    }

    @Test
    @DisplayName("S21: the published annotations stay in the compiler: the application's classes hold none of them")
    void nothingAtRunTime() throws IOException {
        try (Stream<Path> files = Files.walk(configuredResult.classes())) {
            for (Path f : files.filter(p -> p.toString().endsWith(".class")).toList()) {
                String bytes = new String(Files.readAllBytes(f), StandardCharsets.ISO_8859_1);
                assertThat(bytes).as(f.toString()).doesNotContain("swagger").doesNotContain("x-idempotency");
            }
        }
    }

    @ParameterizedTest(name = "S21: the published key pattern agrees with the filter for {0}")
    @ValueSource(strings = {
        "\"abc\"", "abc", "\"a b\"", "a b", "\"a\\\"b\"", "\"a\\\\b\"", "\"a\\nb\"", "\"\"", "", "a,b", "\"a,b\"",
        "\"unterminated", "a\"b", "\"caf\u00e9\"", "\"tab\tinside\"", "8e03978e-40d5-43e8-bc93-6894a57f9324",
        "\"x\" \"y\"", "~!#$%&'*+-.^_`|", "\"~!#$%&'()*+,-./:;<=>?@[]^_`{|}\""})
    void patternMatchesParser(String value) {
        boolean parses;
        try {
            KeyHeader.parse(value, false);
            parses = true;
        } catch (MalformedKeyException e) {
            parses = false;
        }
        assertThat(Pattern.compile(OperationAnnotations.KEY_PATTERN).matcher(value).matches()).isEqualTo(parses);
    }

    @Test
    @DisplayName("S21: the published key pattern bounds the key at 255 characters, quoted or bare")
    void patternLength() {
        Pattern p = Pattern.compile(OperationAnnotations.KEY_PATTERN);
        String max = "k".repeat(255);
        assertThat(p.matcher(max).matches()).isTrue();
        assertThat(p.matcher("\"" + max + "\"").matches()).isTrue();
        assertThat(p.matcher(max + "k").matches()).isFalse();
        assertThat(p.matcher("\"" + max + "k\"").matches()).isFalse();
    }

    @Test
    @DisplayName("S21: without micronaut-openapi on the processor path the module only warns and the build succeeds")
    void withoutMicronautOpenApi() {
        OpenApiCompilation.Result r = OpenApiCompilation.in(tmp.resolve("no-openapi"))
            .source("demo.TransfersController", TRANSFERS)
            .withoutOpenApiProcessor()
            .compile();
        assertThat(r.exitCode()).as(r.output()).isZero();
        assertThat(r.output()).contains("idempotency-openapi is on the annotation processor path without micronaut-openapi");
        assertThat(r.document()).isEmpty();
    }

    private static void assertProblem(Map<String, Object> responses, String status, String... codes) {
        Map<String, Object> response = map(responses, status);
        assertThat((String) response.get("description")).contains(codes);
        Map<String, Object> content = map(response, "content");
        assertThat(content).containsOnlyKeys("application/problem+json");
        Map<String, Object> media = map(content, "application/problem+json");
        // one shared schema, by reference
        assertThat(map(media, "schema")).containsOnly(Map.entry("$ref", "#/components/schemas/IdempotencyProblem"));
        assertThat((String) response.get("description")).startsWith("The Idempotency-Key filter answers this status itself");
        assertThat(map(media, "examples")).containsOnlyKeys(codes);
    }

    static Map<String, Object> operation(Map<String, Object> document, String path, String method) {
        Map<String, Object> item = map(map(document, "paths"), path);
        return map(item, method);
    }

    private static Map<String, Object> keyParameter(Map<String, Object> operation, String name) {
        return parameters(operation).stream().filter(p -> name.equals(p.get("name"))).findFirst()
            .orElseThrow(() -> new AssertionError("no parameter " + name + " in " + operation));
    }

    private static List<String> names(Map<String, Object> operation) {
        return parameters(operation).stream().map(p -> (String) p.get("name")).toList();
    }

    @SuppressWarnings("unchecked")
    private static List<Map<String, Object>> parameters(Map<String, Object> operation) {
        return (List<Map<String, Object>>) operation.getOrDefault("parameters", List.of());
    }

    @SuppressWarnings("unchecked")
    static Map<String, Object> map(Map<String, Object> m, String key) {
        Object v = m.get(key);
        assertThat(v).as("%s in %s", key, m.keySet()).isInstanceOf(Map.class);
        return (Map<String, Object>) v;
    }

    @SuppressWarnings("unchecked")
    private static List<Object> list(Map<String, Object> m, String key) {
        Object v = m.get(key);
        assertThat(v).as("%s in %s", key, m.keySet()).isInstanceOf(List.class);
        return (List<Object>) v;
    }
}
