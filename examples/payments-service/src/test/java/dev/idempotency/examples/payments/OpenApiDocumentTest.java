package dev.idempotency.examples.payments;

import dev.idempotency.server.IdempotencyConfiguration;
import dev.idempotency.server.Idempotent;
import io.micronaut.core.convert.ConversionService;
import io.micronaut.http.annotation.Controller;
import io.micronaut.http.annotation.Delete;
import io.micronaut.http.annotation.Get;
import io.micronaut.http.annotation.Patch;
import io.micronaut.http.annotation.Post;
import io.micronaut.http.annotation.Put;
import io.micronaut.json.JsonMapper;
import io.micronaut.runtime.server.EmbeddedServer;
import io.micronaut.test.extensions.junit5.annotation.MicronautTest;
import jakarta.inject.Inject;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.DisplayName;
import org.junit.jupiter.api.Test;
import org.yaml.snakeyaml.LoaderOptions;
import org.yaml.snakeyaml.Yaml;
import org.yaml.snakeyaml.constructor.SafeConstructor;

import java.lang.annotation.Annotation;
import java.lang.reflect.Method;
import java.net.http.HttpResponse;
import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Set;
import java.util.TreeSet;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * CONTRACT S21: the service publishes its OpenAPI document (generated while compiling, by
 * micronaut-openapi with idempotency-openapi on the processor path) and every operation the
 * filter protects declares the Idempotency-Key header, the filter's problem responses and its
 * policy in {@code x-idempotency}, with nothing written by hand in the controller. The
 * operations are found from {@link Idempotent} on {@link PaymentsController}, not listed here.
 */
@MicronautTest
class OpenApiDocumentTest {

    static final String DOCUMENT = "/swagger/payments-1.0.yml";

    @Inject
    EmbeddedServer server;
    @Inject
    IdempotencyConfiguration config;
    @Inject
    JsonMapper json;

    Map<String, Object> document;

    @BeforeEach
    void fetch() {
        HttpResponse<byte[]> r = new Api(server.getURI(), json).get(DOCUMENT);
        assertThat(r.statusCode()).as("GET " + DOCUMENT).isEqualTo(200);
        document = new Yaml(new SafeConstructor(new LoaderOptions())).load(Api.text(r));
    }

    @Test
    @DisplayName("S21: the served document describes exactly the @Idempotent operations as idempotent")
    void exactlyTheIdempotentOperations() {
        Set<String> idempotent = new TreeSet<>(idempotentOperations().keySet());
        assertThat(idempotent).as("@Idempotent operations of PaymentsController")
            .contains("POST /payments", "POST /payments/{id}/capture", "POST /payments/{id}/refunds", "PATCH /payments/{id}");
        Set<String> published = new TreeSet<>();
        operations().forEach((name, op) -> {
            if (cast(op).containsKey("x-idempotency")) {
                published.add(name);
            }
        });
        // and the card gateway's webhooks (GatewayWebhooks), keyed by the sender's webhook-id header (S4)
        Set<String> expected = new TreeSet<>(idempotent);
        expected.add("POST /webhooks/gateway");
        assertThat(published).isEqualTo(expected);
        Map<String, Object> webhook = cast(operations().get("POST /webhooks/gateway"));
        assertThat(map(webhook, "x-idempotency")).containsEntry("header", "webhook-id");
        assertThat(parameters(webhook)).anyMatch(p -> "webhook-id".equals(p.get("name")))
            .noneMatch(p -> config.getHeaderName().equals(p.get("name")));
    }

    @Test
    @DisplayName("S21: each @Idempotent operation declares the key header, its 400/409/422 problem responses, and required and retention")
    void idempotentOperationsDeclareThePolicy() {
        Map<String, Object> byName = operations();
        idempotentOperations().forEach((name, idempotent) -> {
            Map<String, Object> op = map(byName, name);

            Map<String, Object> header = parameters(op).stream()
                .filter(p -> config.getHeaderName().equals(p.get("name"))).findFirst()
                .orElseThrow(() -> new AssertionError(name + " has no " + config.getHeaderName() + " parameter"));
            assertThat(header).as(name).containsEntry("in", "header").containsEntry("required", idempotent.required());
            assertThat(map(header, "schema")).as(name).containsEntry("type", "string").containsKey("pattern");

            Map<String, Object> responses = map(op, "responses");
            assertProblem(name, responses, "400", "idempotency-key-missing", "idempotency-key-invalid");
            assertProblem(name, responses, "409", "idempotency-request-in-progress");
            assertProblem(name, responses, "422", "idempotency-key-reused");
            assertThat(map(map(responses, "409"), "headers")).as(name).containsKey("Retry-After");

            Map<String, Object> x = map(op, "x-idempotency");
            assertThat(x).as(name).containsEntry("required", idempotent.required())
                .containsEntry("header", config.getHeaderName())
                .containsEntry("contract", config.getContractUrl().toString());
            // the published retention is the running filter's: the annotation's, else the configured one
            Duration expected = idempotent.retention().isBlank() ? config.getRetention()
                : ConversionService.SHARED.convert(idempotent.retention(), Duration.class).orElseThrow();
            assertThat(ConversionService.SHARED.convert(x.get("retention"), Duration.class)).as(name).hasValue(expected);
            assertThat(ConversionService.SHARED.convert(x.get("lease"), Duration.class)).as(name).hasValue(config.getLease());
        });
    }

    @Test
    @DisplayName("S21: the reads (GET) have none of it: no key header, no filter responses, no x-idempotency")
    void readsHaveNone() {
        Map<String, Map<String, Object>> reads = new LinkedHashMap<>();
        operations().forEach((name, op) -> {
            if (name.startsWith("GET ")) {
                reads.put(name, cast(op));
            }
        });
        assertThat(reads).containsKeys("GET /payments", "GET /payments/{id}", "GET /payments/{id}/refunds/{refundId}", "GET /stats");
        reads.forEach((name, op) -> {
            assertThat(op).as(name).doesNotContainKey("x-idempotency");
            assertThat(parameters(op)).as(name).noneMatch(p -> config.getHeaderName().equals(p.get("name")));
            assertThat(map(op, "responses")).as(name).doesNotContainKeys("400", "409", "413", "422", "503");
        });
    }

    /** Every operation of the document, by "METHOD /path". */
    private Map<String, Object> operations() {
        Map<String, Object> result = new LinkedHashMap<>();
        map(document, "paths").forEach((path, item) ->
            cast(item).forEach((method, op) -> result.put(method.toUpperCase(Locale.ROOT) + " " + path, op)));
        return result;
    }

    /** The filter's operations of the controller ("METHOD /path"), from its annotations and the covered methods. */
    private Map<String, Idempotent> idempotentOperations() {
        Class<PaymentsController> type = PaymentsController.class;
        String base = type.getAnnotation(Controller.class).value();
        Map<String, Idempotent> result = new LinkedHashMap<>();
        for (Method m : type.getDeclaredMethods()) {
            Idempotent idempotent = m.isAnnotationPresent(Idempotent.class) ? m.getAnnotation(Idempotent.class)
                : type.getAnnotation(Idempotent.class);
            for (Annotation a : m.getAnnotations()) {
                String httpMethod = httpMethod(a);
                if (httpMethod != null && idempotent != null && config.getMethods().contains(httpMethod)) {
                    result.put(httpMethod + " " + base + uri(a), idempotent);
                }
            }
        }
        return result;
    }

    private static String httpMethod(Annotation a) {
        return a instanceof Post || a instanceof Patch || a instanceof Put || a instanceof Delete || a instanceof Get
            ? a.annotationType().getSimpleName().toUpperCase(Locale.ROOT) : null;
    }

    private static String uri(Annotation a) {
        String v;
        if (a instanceof Post p) {
            v = p.value();
        } else if (a instanceof Patch p) {
            v = p.value();
        } else if (a instanceof Put p) {
            v = p.value();
        } else if (a instanceof Delete d) {
            v = d.value();
        } else {
            v = ((Get) a).value();
        }
        return "/".equals(v) ? "" : v;
    }

    private void assertProblem(String name, Map<String, Object> responses, String status, String... codes) {
        Map<String, Object> response = map(responses, status);
        Map<String, Object> media = map(map(response, "content"), "application/problem+json");
        // the one shared problem schema, by reference
        Object ref = map(media, "schema").get("$ref");
        assertThat(ref).as(name + " " + status).isEqualTo("#/components/schemas/IdempotencyProblem");
        Map<String, Object> schema = map(map(map(document, "components"), "schemas"), "IdempotencyProblem");
        assertThat(map(schema, "properties")).as(name + " " + status).containsKeys("type", "title", "status", "detail", "code");
        assertThat((String) response.get("description")).as(name + " " + status).contains(codes);
    }

    @SuppressWarnings("unchecked")
    private static List<Map<String, Object>> parameters(Map<String, Object> op) {
        return new ArrayList<>((List<Map<String, Object>>) op.getOrDefault("parameters", List.of()));
    }

    private static Map<String, Object> map(Map<String, Object> m, String key) {
        Object v = m.get(key);
        assertThat(v).as("%s in %s", key, m.keySet()).isInstanceOf(Map.class);
        return cast(v);
    }

    @SuppressWarnings("unchecked")
    private static Map<String, Object> cast(Object o) {
        return (Map<String, Object>) o;
    }
}
