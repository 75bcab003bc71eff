package dev.idempotency.openapi;

import dev.idempotency.server.IdempotencyConfigurationProperties;
import io.micronaut.core.annotation.AnnotationValue;
import io.micronaut.core.annotation.AnnotationValueBuilder;
import io.micronaut.inject.ast.ClassElement;
import io.micronaut.inject.ast.MethodElement;
import io.micronaut.inject.ast.ParameterElement;
import io.swagger.v3.oas.annotations.Operation;
import io.swagger.v3.oas.annotations.Parameter;
import io.swagger.v3.oas.annotations.enums.ParameterIn;
import io.swagger.v3.oas.annotations.extensions.Extension;
import io.swagger.v3.oas.annotations.extensions.ExtensionProperty;
import io.swagger.v3.oas.annotations.headers.Header;
import io.swagger.v3.oas.annotations.media.Content;
import io.swagger.v3.oas.annotations.media.ExampleObject;
import io.swagger.v3.oas.annotations.media.Schema;
import io.swagger.v3.oas.annotations.responses.ApiResponse;

import java.lang.annotation.Annotation;
import java.lang.annotation.RetentionPolicy;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Set;
import java.util.stream.Collectors;

import static dev.idempotency.openapi.IdempotencyOpenApiVisitor.placeholder;

/**
 * The swagger annotations that publish one operation's policy; the only class here that touches
 * swagger types, so the visitor loads without them. Each annotation is built with
 * {@link RetentionPolicy#SOURCE}: micronaut-openapi reads it in the compiler and the
 * application's bean metadata never holds it.
 */
final class OperationAnnotations {

    static final String EXTENSION_NAME = "x-idempotency";
    static final String PROBLEM_JSON = "application/problem+json";

    private static final String HTTP_HEADERS = "io.micronaut.http.annotation.Headers";
    private static final String HEADER_NAME = placeholder("header-name", IdempotencyConfigurationProperties.DEFAULT_HEADER_NAME);
    private static final String REPLAYED_HEADER_NAME =
        placeholder("replayed-header-name", IdempotencyConfigurationProperties.DEFAULT_REPLAYED_HEADER_NAME);
    private static final String CONTRACT_URL = placeholder("contract-url", IdempotencyConfigurationProperties.DEFAULT_CONTRACT_PAGE);
    private static final String MAX_BODY_SIZE = placeholder("max-request-body-size",
        Integer.toString(IdempotencyConfigurationProperties.DEFAULT_MAX_REQUEST_BODY_SIZE));
    /** The one problem schema every problem response refers to (components/schemas). */
    static final String PROBLEM_SCHEMA = "IdempotencyProblem";

    private OperationAnnotations() {
    }

    /**
     * Everything goes into the method's {@code @Operation}, merged with the one it has: micronaut-openapi
     * reads an operation's parameters, responses and extensions from it, and it is not repeatable, so
     * unlike {@code @ApiResponse} it needs no annotation type on the application's compile classpath.
     */
    static void annotate(MethodElement method, PublishedPolicy policy) {
        AnnotationValue<Operation> existing = method.getAnnotation(Operation.class);

        List<AnnotationValue<?>> parameters = new ArrayList<>(
            existing == null ? List.of() : existing.getAnnotations("parameters"));
        boolean hasHeader = parameters.stream().anyMatch(p -> isKeyHeader(p.stringValue("name").orElse("")))
            || method.getAnnotationValuesByType(Parameter.class).stream()
                .anyMatch(p -> isKeyHeader(p.stringValue("name").orElse("")))
            || Arrays.stream(method.getParameters()).anyMatch(OperationAnnotations::bindsKeyHeader);
        if (!policy.keyHeader().isEmpty()) {
            String raw = policy.keyHeader();
            if (parameters.stream().noneMatch(p -> normalized(p.stringValue("name").orElse("")).equals(normalized(raw)))) {
                parameters.add(rawHeaderParameter(policy));
            }
        } else if (!hasHeader && policy.keyPointer().isEmpty()) {
            parameters.add(headerParameter(policy));
        }

        List<AnnotationValue<?>> responses = new ArrayList<>(
            existing == null ? List.of() : existing.getAnnotations("responses"));
        Set<String> declared = declaredResponseCodes(method);
        for (AnnotationValue<ApiResponse> r : responses(policy)) {
            if (!declared.contains(r.stringValue("responseCode").orElseThrow())) {
                responses.add(r);
            }
        }

        List<AnnotationValue<?>> extensions = new ArrayList<>(
            existing == null ? List.of() : existing.getAnnotations("extensions"));
        boolean hasExtension = extensions.stream()
            .map(e -> e.stringValue("name").orElse(""))
            .anyMatch(n -> n.equals(EXTENSION_NAME) || ("x-" + n).equals(EXTENSION_NAME));
        if (!hasExtension) {
            extensions.add(extension(policy));
        }

        AnnotationValueBuilder<Operation> operation = source(Operation.class);
        if (existing != null) {
            operation.members(existing.getValues());
        }
        method.annotate(operation
            .member("parameters", parameters.toArray(new AnnotationValue<?>[0]))
            .member("responses", responses.toArray(new AnnotationValue<?>[0]))
            .member("extensions", extensions.toArray(new AnnotationValue<?>[0]))
            .build());
    }

    /**
     * Compares with the default header name only: the configured one is a placeholder until
     * micronaut-openapi writes the document. An application that renames the header and also binds
     * it in a handler gets the parameter twice (documented in the server guide).
     */
    private static boolean isKeyHeader(String name) {
        return normalized(name).equals(normalized(IdempotencyConfigurationProperties.DEFAULT_HEADER_NAME));
    }

    /**
     * An argument that binds the key header itself ({@code @Header("Idempotency-Key") String key})
     * already makes micronaut-openapi document it; a second parameter of that name would be wrong.
     */
    private static boolean bindsKeyHeader(ParameterElement argument) {
        // @Header is repeatable: the argument's metadata holds it in its container @Headers
        AnnotationValue<Annotation> headers = argument.getAnnotation(HTTP_HEADERS);
        List<AnnotationValue<Annotation>> bound = headers == null ? List.of() : headers.getAnnotations("value");
        for (AnnotationValue<Annotation> header : bound) {
            if (isKeyHeader(header.stringValue().filter(n -> !n.isBlank()).orElse(argument.getName()))) {
                return true;
            }
        }
        return argument.stringValue(Parameter.class, "name").filter(OperationAnnotations::isKeyHeader).isPresent();
    }

    /** Header names compare without case; a bound argument's name ({@code idempotencyKey}) has no hyphens. */
    private static String normalized(String name) {
        return name.replace("-", "").toLowerCase(Locale.ROOT);
    }

    private static Set<String> declaredResponseCodes(MethodElement method) {
        Set<String> codes = new LinkedHashSet<>();
        List<AnnotationValue<ApiResponse>> all = new ArrayList<>(method.getAnnotationValuesByType(ApiResponse.class));
        ClassElement owner = method.getOwningType();
        all.addAll(owner.getAnnotationValuesByType(ApiResponse.class));
        all.addAll(method.getDeclaringType().getAnnotationValuesByType(ApiResponse.class));
        AnnotationValue<Operation> operation = method.getAnnotation(Operation.class);
        if (operation != null) {
            all.addAll(operation.getAnnotations("responses", ApiResponse.class));
        }
        for (AnnotationValue<ApiResponse> r : all) {
            r.stringValue("responseCode").ifPresent(codes::add);
        }
        return codes;
    }

    private static AnnotationValue<Parameter> headerParameter(PublishedPolicy policy) {
        return source(Parameter.class)
            .member("name", HEADER_NAME)
            .member("in", ParameterIn.HEADER)
            .member("required", policy.required())
            .member("description", "One key per logical operation: create it once (e.g. a UUID) and send it"
                + " unchanged on every retry of that operation. The value is an RFC 9651 sf-string"
                + " (\"8e03978e-40d5-43e8-bc93-6894a57f9324\", with \\\" and \\\\ escapes); a bare token without"
                + " quotes is accepted as the same key unless the server is strict. After parsing: 1 to 255"
                + " printable ASCII characters (0x20-0x7E). "
                + (policy.required()
                    ? "Required: a request without it is answered 400 idempotency-key-missing."
                    : "Optional: a request without it runs without idempotency.")
                + " A completed result is replayed to retries for " + policy.retention() + ", marked "
                + REPLAYED_HEADER_NAME + ": true. Contract: " + CONTRACT_URL)
            .member("example", "\"8e03978e-40d5-43e8-bc93-6894a57f9324\"")
            .member("schema", source(Schema.class)
                .member("type", "string")
                .member("pattern", KEY_PATTERN)
                .build())
            .build();
    }

    /** A header that carries the key as its raw value ({@code @Idempotent(keyHeader)}), e.g. a webhook's delivery id. */
    private static AnnotationValue<Parameter> rawHeaderParameter(PublishedPolicy policy) {
        return source(Parameter.class)
            .member("name", policy.keyHeader())
            .member("in", ParameterIn.HEADER)
            .member("required", policy.required())
            .member("description", "This operation's idempotency key, taken as the header's raw value: 1 to 255"
                + " printable ASCII characters (0x20-0x7E), the same on every retry or redelivery. "
                + (policy.required()
                    ? "Required: a request without it is answered 400 idempotency-key-missing."
                    : "Optional: a request without it runs without idempotency.")
                + " A completed result is replayed to retries for " + policy.retention() + ", marked "
                + REPLAYED_HEADER_NAME + ": true. Contract: " + CONTRACT_URL)
            .member("schema", source(Schema.class)
                .member("type", "string")
                .member("pattern", RAW_KEY_PATTERN)
                .build())
            .build();
    }

    /** A raw header value or body member used as the key: 1 to 255 printable ASCII characters. */
    static final String RAW_KEY_PATTERN = "^[ -~]{1,255}$";

    /**
     * The header value as sent: an sf-string of 1 to 255 printable ASCII characters (quotes and
     * backslashes escaped) or a bare token (printable ASCII without space, quote, backslash or comma).
     */
    static final String KEY_PATTERN = "^(\"([ !#-\\[\\]-~]|\\\\[\"\\\\]){1,255}\"|[!#-+\\--\\[\\]-~]{1,255})$";

    /** One response per status, for the problems the filter can answer on this route. */
    private static List<AnnotationValue<ApiResponse>> responses(PublishedPolicy policy) {
        Map<Integer, List<FilterProblem>> byStatus = new LinkedHashMap<>();
        for (FilterProblem p : FilterProblem.applicable(policy.required(), policy.failOpen())) {
            byStatus.computeIfAbsent(p.status, s -> new ArrayList<>()).add(p);
        }
        List<AnnotationValue<ApiResponse>> result = new ArrayList<>();
        byStatus.forEach((status, problems) -> result.add(response(status, problems)));
        return result;
    }

    private static AnnotationValue<ApiResponse> response(int status, List<FilterProblem> problems) {
        // the operation may answer this status too (a business 409 or 422, say), with its own codes:
        // describe the filter's cases, never claim the status for the filter alone
        StringBuilder description = new StringBuilder("The Idempotency-Key filter answers this status itself"
            + " (then the operation did not run) when:");
        List<AnnotationValue<?>> examples = new ArrayList<>();
        for (FilterProblem p : problems) {
            description.append(' ').append(p.code).append(": ").append(p.meaning).append('.');
            examples.add(source(ExampleObject.class)
                .member("name", p.code)
                .member("summary", p.title)
                .member("value", "{\"type\":" + json(CONTRACT_URL + "#" + p.code) + ",\"title\":" + json(p.title)
                    + ",\"status\":" + status + ",\"detail\":" + json(p.detail(HEADER_NAME, MAX_BODY_SIZE))
                    + ",\"code\":" + json(p.code) + "}")
                .build());
        }
        AnnotationValueBuilder<ApiResponse> response = source(ApiResponse.class)
            .member("responseCode", Integer.toString(status))
            .member("description", description.toString())
            .member("content", new AnnotationValue<?>[] {source(Content.class)
                .member("mediaType", PROBLEM_JSON)
                .member("schema", source(Schema.class).member("ref", "#/components/schemas/" + PROBLEM_SCHEMA).build())
                .member("examples", examples.toArray(new AnnotationValue<?>[0]))
                .build()});
        if (problems.stream().anyMatch(FilterProblem::retryAfter)) {
            response.member("headers", new AnnotationValue<?>[] {source(Header.class)
                .member("name", "Retry-After")
                .member("required", false)
                .member("description", "With " + problems.stream().filter(FilterProblem::retryAfter)
                    .map(p -> p.code).collect(Collectors.joining(" and "))
                    + ": whole seconds to wait before retrying with the same key (at least 1).")
                .member("schema", source(Schema.class)
                    .member("type", "integer")
                    .member("minimum", "1")
                    .build())
                .build()});
        }
        return response.build();
    }

    private static AnnotationValue<Extension> extension(PublishedPolicy policy) {
        String problems = FilterProblem.applicable(policy.required(), policy.failOpen()).stream()
            .map(p -> json(p.code) + ":" + p.status)
            .collect(Collectors.joining(",", "{", "}"));
        return source(Extension.class)
            .member("name", EXTENSION_NAME)
            .member("properties",
                property("required", Boolean.toString(policy.required()), true),
                property("key", keySource(policy), true),
                property("header", policy.keyPointer().isEmpty() ? (policy.keyHeader().isEmpty() ? HEADER_NAME
                    : policy.keyHeader()) : "", false),
                property("operation", policy.operation(), false),
                property("retention", policy.retention(), false),
                property("lease", policy.lease(), false),
                property("inFlightWait", policy.inFlightWait(), false),
                property("replayedHeader", REPLAYED_HEADER_NAME, false),
                property("contract", CONTRACT_URL, false),
                property("problems", problems, true))
            .build();
    }

    /** @return where the key is, as JSON: {@code {"in":"header","name":...,"format":"sf-string"|"raw"}} or {@code {"in":"body","pointer":...}} */
    private static String keySource(PublishedPolicy policy) {
        if (!policy.keyPointer().isEmpty()) {
            return "{\"in\":\"body\",\"pointer\":" + json(policy.keyPointer()) + "}";
        }
        if (!policy.keyHeader().isEmpty()) {
            return "{\"in\":\"header\",\"name\":" + json(policy.keyHeader()) + ",\"format\":\"raw\"}";
        }
        return "{\"in\":\"header\",\"name\":" + json(HEADER_NAME) + ",\"format\":\"sf-string\"}";
    }

    private static AnnotationValue<ExtensionProperty> property(String name, String value, boolean json) {
        AnnotationValueBuilder<ExtensionProperty> b = source(ExtensionProperty.class)
            .member("name", name)
            .member("value", value);
        if (json) {
            b.member("parseValue", true);
        }
        return b.build();
    }

    /** Swagger annotations micronaut-openapi reads at compile time; none is kept in the application's metadata. */
    private static <T extends Annotation> AnnotationValueBuilder<T> source(Class<T> type) {
        return AnnotationValue.builder(type.getName(), RetentionPolicy.SOURCE);
    }

    /** A JSON string literal; the texts here hold no control characters. */
    private static String json(String s) {
        return "\"" + s.replace("\\", "\\\\").replace("\"", "\\\"") + "\"";
    }
}
