package dev.idempotency.openapi;

import dev.idempotency.server.IdempotencyConfigurationProperties;
import io.micronaut.core.annotation.AnnotationValue;
import io.micronaut.core.annotation.Internal;
import io.micronaut.inject.ast.MethodElement;
import io.micronaut.inject.visitor.TypeElementVisitor;
import io.micronaut.inject.visitor.VisitorContext;

import java.lang.annotation.Annotation;
import java.util.LinkedHashSet;
import java.util.Locale;
import java.util.Set;

/**
 * Publishes the Idempotency-Key policy of every {@code @Idempotent} operation in the OpenAPI
 * document that micronaut-openapi generates (CONTRACT S21). It runs in the compiler, on the
 * annotation processor path next to micronaut-openapi; nothing of it reaches the application at
 * run time.
 *
 * <p>What it guarantees, for each controller method that is {@code @Idempotent} (on the method
 * or its class; method members win, as in the filter) and mapped to a covered HTTP method
 * (POST and PATCH, the filter's default; when the application changes {@code idempotency.methods},
 * pass the same set as {@code -Amicronaut.idempotency.openapi.methods=POST,PATCH,PUT}):
 * <ul>
 *   <li>a header parameter named {@code idempotency.header-name} (default
 *       {@code Idempotency-Key}), {@code required} as the annotation's {@code required}, with
 *       the key's syntax (an RFC 9651 sf-string or a bare token, 1 to 255 printable ASCII
 *       characters) as its schema pattern;</li>
 *   <li>the responses the filter itself answers, as {@code application/problem+json} with the
 *       problem members {@code type}, {@code title}, {@code status}, {@code detail} and
 *       {@code code}: 400 (key missing or invalid), 409 (request in progress, with
 *       {@code Retry-After}), 413 (body too large), 422 (key reused) and 503 (store
 *       unavailable, with {@code Retry-After}; left out when the route fails open);</li>
 *   <li>an {@code x-idempotency} operation extension with {@code required}, {@code header},
 *       {@code retention}, {@code lease}, {@code inFlightWait}, {@code replayedHeader},
 *       {@code contract} and {@code problems} (each problem code the route can answer, with its
 *       status).</li>
 * </ul>
 * Durations are published as written: the annotation's member when it has one, otherwise the
 * application's setting ({@code idempotency.retention}, {@code idempotency.lease}), which
 * micronaut-openapi resolves at compile time from the application's configuration files
 * ({@code src/main/resources/application.*}), with the filter's defaults ({@code 24h},
 * {@code 30s}) when they are not set; the header names and the contract URL likewise. A value
 * set only at run time (an environment variable, another environment's file) is not seen.
 *
 * <p>All of it goes into the method's {@code @Operation}, merged with the one the method has.
 * What the operation already declares is kept: a response code it documents itself
 * ({@code @ApiResponse} on the method or class, or in {@code @Operation(responses)}), a header
 * parameter of the same name, or its own {@code x-idempotency} extension is left exactly as
 * written, and the filter's problem codes stay listed in the extension. Nothing is added to
 * operations that are not {@code @Idempotent} or to methods the filter does not cover, and
 * nothing at all when micronaut-openapi is not on the processor path (a warning says so).
 *
 * <p>Public only because the compiler loads it through {@code ServiceLoader}; not an API.
 */
@Internal
public final class IdempotencyOpenApiVisitor implements TypeElementVisitor<Object, Object> {

    /**
     * Annotation processor option: the HTTP methods the filter covers, comma-separated, when the
     * application changes {@code idempotency.methods}. Default {@code POST,PATCH}.
     */
    static final String METHODS_OPTION = "micronaut.idempotency.openapi.methods";

    /**
     * The visitor's order: above micronaut-openapi's visitors (100 and 50), so the annotations
     * it adds are in place before they read a controller.
     */
    static final int POSITION = 200;

    /** The name of the filter's annotation; read by name so the filter need not be on the processor path. */
    static final String IDEMPOTENT = "dev.idempotency.server.Idempotent";
    static final String DEFAULT_RETENTION = "24h";
    static final String DEFAULT_LEASE = "30s";

    private static final String PREFIX = IdempotencyConfigurationProperties.PREFIX + ".";
    private static final String CONTROLLER = "io.micronaut.http.annotation.Controller";
    private static final String HTTP_METHOD_MAPPING = "io.micronaut.http.annotation.HttpMethodMapping";
    private static final Set<String> DEFAULT_METHODS = Set.of("POST", "PATCH");

    private static final String OPENAPI_VISITOR = "io.micronaut.openapi.visitor.OpenApiApplicationVisitor";
    private static final String OPERATION = "io.swagger.v3.oas.annotations.Operation";

    private Set<String> methods = DEFAULT_METHODS;
    /** The methods an {@code @Idempotent} on the method itself covers, whatever the configured set. */
    private static final Set<String> EXPLICIT_METHODS = Set.of("POST", "PATCH", "PUT", "DELETE");
    private boolean enabled;

    @Override
    public String getClassType() {
        return CONTROLLER;
    }

    @Override
    public int getOrder() {
        return POSITION;
    }

    @Override
    public VisitorKind getVisitorKind() {
        // the same processor as micronaut-openapi's visitors, which are aggregating: only within one
        // processor does the order above decide who sees a controller first
        return VisitorKind.AGGREGATING;
    }

    @Override
    public Set<String> getSupportedOptions() {
        return Set.of(METHODS_OPTION);
    }

    @Override
    public void start(VisitorContext context) {
        enabled = present(OPENAPI_VISITOR) && present(OPERATION);
        if (!enabled) {
            context.warn("idempotency-openapi is on the annotation processor path without micronaut-openapi;"
                + " no OpenAPI document is generated, so the Idempotency-Key policy is not published", null);
            return;
        }
        String option = context.getOptions().get(METHODS_OPTION);
        if (option == null || option.isBlank()) {
            methods = DEFAULT_METHODS;
            return;
        }
        Set<String> configured = new LinkedHashSet<>();
        for (String m : option.split(",")) {
            if (!m.isBlank()) {
                configured.add(m.trim().toUpperCase(Locale.ROOT));
            }
        }
        methods = Set.copyOf(configured);
    }

    @Override
    public void visitMethod(MethodElement method, VisitorContext context) {
        // the method's metadata includes its class's, member by member with the method's first:
        // the same merge the filter reads at run time
        AnnotationValue<Annotation> idempotent = method.getAnnotation(IDEMPOTENT);
        if (!enabled || idempotent == null || !covered(method)) {
            return;
        }
        PublishedPolicy policy = new PublishedPolicy(
            idempotent.booleanValue("required").orElse(true),
            nonBlank(idempotent.stringValue("retention").orElse(""), placeholder("retention", DEFAULT_RETENTION)),
            nonBlank(idempotent.stringValue("lease").orElse(""), placeholder("lease", DEFAULT_LEASE)),
            nonBlank(idempotent.stringValue("inFlightWait").orElse(""), "0s"),
            // a transactional route answers 503 on a failed commit even when it fails open
            idempotent.booleanValue("failOpen").orElse(false) && !idempotent.booleanValue("transactional").orElse(false),
            idempotent.stringValue("keyHeader").orElse("").trim(), idempotent.stringValue("keyPointer").orElse("").trim(),
            idempotent.stringValue("operation").orElse("").trim());
        OperationAnnotations.annotate(method, policy);
        ProblemSchema.register(context);
    }

    private static boolean present(String className) {
        try {
            Class.forName(className, false, IdempotencyOpenApiVisitor.class.getClassLoader());
            return true;
        } catch (ClassNotFoundException | LinkageError e) {
            return false;
        }
    }

    /**
     * As the filter decides (CONTRACT S1, S2): an annotation on the method itself covers POST,
     * PATCH, PUT and DELETE; one on the class covers the configured methods.
     */
    private boolean covered(MethodElement method) {
        boolean explicit = method.hasDeclaredAnnotation(IDEMPOTENT);
        return method.getAnnotationNameByStereotype(HTTP_METHOD_MAPPING)
            .map(name -> name.substring(name.lastIndexOf('.') + 1).toUpperCase(Locale.ROOT))
            .filter(m -> methods.contains(m) || (explicit && EXPLICIT_METHODS.contains(m)))
            .isPresent();
    }

    /**
     * A property placeholder micronaut-openapi resolves against the application's configuration
     * when it writes the document; a default holding ':' goes in backticks.
     */
    static String placeholder(String property, String defaultValue) {
        String d = defaultValue.indexOf(':') >= 0 ? "`" + defaultValue + "`" : defaultValue;
        return "${" + PREFIX + property + ":" + d + "}";
    }

    private static String nonBlank(String value, String fallback) {
        return value.isBlank() ? fallback : value.trim();
    }
}
