package dev.idempotency.server.internal.http;

import dev.idempotency.server.Checks;
import dev.idempotency.server.IdempotencyConfiguration;
import dev.idempotency.server.IdempotencyConfigurationProperties;
import dev.idempotency.server.Idempotent;
import dev.idempotency.server.internal.engine.KeySource;
import dev.idempotency.server.internal.engine.RouteLatency;
import dev.idempotency.server.internal.engine.RoutePolicy;
import dev.idempotency.server.internal.fingerprint.JsonPointers;
import dev.idempotency.server.internal.response.Attributes;
import dev.idempotency.server.internal.response.HeaderNames;
import dev.idempotency.server.store.IdempotencyStore;
import dev.idempotency.server.store.TransactionalIdempotencyStore;
import io.micronaut.context.annotation.Requires;
import io.micronaut.context.event.StartupEvent;
import io.micronaut.core.annotation.AnnotationMetadata;
import io.micronaut.core.annotation.AnnotationValue;
import io.micronaut.core.annotation.Internal;
import io.micronaut.core.annotation.Nullable;
import io.micronaut.core.convert.ConversionService;
import io.micronaut.http.HttpRequest;
import io.micronaut.http.annotation.Get;
import io.micronaut.http.annotation.Head;
import io.micronaut.http.annotation.Options;
import io.micronaut.http.annotation.Trace;
import io.micronaut.json.JsonMapper;
import io.micronaut.runtime.event.annotation.EventListener;
import io.micronaut.web.router.RouteInfo;
import io.micronaut.web.router.Router;
import io.micronaut.web.router.UriRouteInfo;
import jakarta.inject.Singleton;

import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Locale;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;

/**
 * Resolves and caches the {@link RoutePolicy} of each route. Every {@link Idempotent} route is
 * resolved at startup, so a bad duration or pointer in an annotation stops the application
 * instead of failing requests.
 */
@Internal
@Singleton
@Requires(property = IdempotencyConfigurationProperties.PREFIX + ".enabled", notEquals = "false")
public final class RoutePolicies {

    private static final RoutePolicy NONE = new RoutePolicy(false, Duration.ZERO, Duration.ZERO, Duration.ZERO,
        false, JsonPointers.NONE, List.of(), "", false, new RouteLatency(), true, false,
        KeySource.header(IdempotencyConfigurationProperties.DEFAULT_HEADER_NAME), null);
    /** Methods that are safe by definition: {@code @Idempotent} on one of them is a mistake that stops the startup. */
    private static final Set<String> SAFE = Set.of("GET", "HEAD", "OPTIONS", "TRACE");
    /** Methods an explicit {@code @Idempotent} covers whatever the configured set says. */
    private static final Set<String> UNSAFE = Set.of("POST", "PATCH", "PUT", "DELETE");

    private final IdempotencyConfiguration config;
    private final ConversionService conversionService;
    private final Router router;
    private final IdempotencyStore store;
    private final boolean jsonMapper;
    private final ConcurrentHashMap<RouteInfo<?>, RoutePolicy> cache = new ConcurrentHashMap<>();

    public RoutePolicies(IdempotencyConfiguration config, ConversionService conversionService, Router router,
                  IdempotencyStore store, @Nullable JsonMapper json) {
        this.config = config;
        this.conversionService = conversionService;
        this.router = router;
        this.store = store;
        this.jsonMapper = json != null;
    }

    @EventListener
    public void validateOnStartup(StartupEvent event) {
        if (config.isTransactional()) {
            requireTransactionalStore(IdempotencyConfigurationProperties.PREFIX + ".transactional=true");
        }
        router.uriRoutes().forEach(this::policyOf);
    }

    private void requireTransactionalStore(String where) {
        if (!(store instanceof TransactionalIdempotencyStore)) {
            throw new IllegalStateException(where + " needs a transactional idempotency store (one that implements "
                + TransactionalIdempotencyStore.class.getName() + ", e.g. the PostgreSQL store with "
                + "idempotency.store.type=postgres), but the active store is " + store.getClass().getName());
        }
    }

    /**
     * @return the route's policy, or {@code null} when the request is not under the contract: its
     *     method is in the configured set and its route is covered, or its route's own method
     *     carries {@code @Idempotent} (S1, S2)
     */
    @Nullable
    public RoutePolicy forRequest(HttpRequest<?> request) {
        String method = request.getMethodName();
        boolean configured = config.getMethods().contains(method);
        if (!configured && !UNSAFE.contains(method)) {
            return null; // safe methods are never covered: nothing to look up
        }
        RouteInfo<?> route = Attributes.route(request);
        if (route == null) {
            return null;
        }
        RoutePolicy policy = policyOf(route);
        return policy == NONE || (!configured && !policy.explicit()) ? null : policy;
    }

    private RoutePolicy policyOf(RouteInfo<?> route) {
        RoutePolicy cached = cache.get(route);
        return cached != null ? cached : cache.computeIfAbsent(route, this::resolve);
    }

    private RoutePolicy resolve(RouteInfo<?> route) {
        AnnotationMetadata metadata = route.getAnnotationMetadata();
        AnnotationValue<Idempotent> ann = metadata.getAnnotation(Idempotent.class);
        String template = route instanceof UriRouteInfo<?, ?> uri ? uri.getUriMatchTemplate().toString() : route.toString();
        String httpMethod = route instanceof UriRouteInfo<?, ?> uri ? uri.getHttpMethodName() : "";
        String where = route instanceof UriRouteInfo<?, ?> ? httpMethod + " " + template : template;
        KeySource header = KeySource.header(config.getHeaderName());
        if (ann == null) {
            if (!config.isGlobal()) {
                return NONE;
            }
            return new RoutePolicy(false, config.getLease(), config.getRetention(), Duration.ZERO, false,
                JsonPointers.compile(config.getIgnoredJsonPointers()),
                headerNames(config.getFingerprintHeaders(), List.of()), template, config.isTransactional(),
                new RouteLatency(), true, false, header, null);
        }
        boolean explicit = declaredOnMethod(metadata);
        if (explicit && SAFE.contains(httpMethod)) {
            String declared = declaredMethod(metadata, httpMethod); // a @Get also makes a HEAD route
            throw new IllegalStateException("@Idempotent on " + declared + " " + template + " ("
                + target((UriRouteInfo<?, ?>) route) + "): " + declared + " is safe by definition"
                + " (RFC 9110), so a retry of it needs no key and the filter never covers it. Remove the annotation,"
                + " or make the route a POST, PATCH, PUT or DELETE if it changes something.");
        }
        List<String> pointers = new ArrayList<>(config.getIgnoredJsonPointers());
        pointers.addAll(IdempotencyConfigurationProperties.requirePointers(
            Arrays.asList(ann.stringValues("ignoreJsonPointers")), "@Idempotent(ignoreJsonPointers) on " + where));
        boolean transactional = config.isTransactional() || ann.booleanValue("transactional").orElse(false);
        if (transactional) {
            requireTransactionalStore("@Idempotent(transactional = true) on " + where);
        }
        List<String> annotated = new ArrayList<>();
        for (String h : ann.stringValues("fingerprintHeaders")) {
            annotated.add(Checks.headerName(h, "@Idempotent(fingerprintHeaders) on " + where));
        }
        return new RoutePolicy(
            ann.booleanValue("required").orElse(true),
            duration(ann, "lease", config.getLease(), where, false),
            duration(ann, "retention", config.getRetention(), where, false),
            duration(ann, "inFlightWait", Duration.ZERO, where, true),
            ann.booleanValue("failOpen").orElse(false),
            JsonPointers.compile(pointers), headerNames(config.getFingerprintHeaders(), annotated),
            template, transactional,
            new RouteLatency(), ann.booleanValue("keepSteps").orElse(true), explicit, keySource(ann, header, where),
            operation(ann, where));
    }

    /** @return whether {@code @Idempotent} is on the route's method itself, not only on its class */
    private static boolean declaredOnMethod(AnnotationMetadata metadata) {
        return metadata.getDeclaredMetadata().hasDeclaredAnnotation(Idempotent.class);
    }

    /** @return the HTTP method the route's own annotation names ({@code GET} for the HEAD route a {@code @Get} adds) */
    private static String declaredMethod(AnnotationMetadata metadata, String routeMethod) {
        for (var m : List.of(Get.class, Head.class, Options.class, Trace.class)) {
            if (metadata.hasDeclaredAnnotation(m)) {
                return m.getSimpleName().toUpperCase(Locale.ROOT);
            }
        }
        return routeMethod;
    }

    private static String target(UriRouteInfo<?, ?> route) {
        return route.getTargetMethod().getDeclaringType().getSimpleName() + "." + route.getTargetMethod().getMethodName();
    }

    private KeySource keySource(AnnotationValue<Idempotent> ann, KeySource header, String where) {
        String keyHeader = ann.stringValue("keyHeader").orElse("").trim();
        String keyPointer = ann.stringValue("keyPointer").orElse("").trim();
        if (!keyHeader.isEmpty() && !keyPointer.isEmpty()) {
            throw new IllegalStateException("@Idempotent on " + where + " names both keyHeader and keyPointer: a route"
                + " takes its key from one place");
        }
        if (!keyHeader.isEmpty()) {
            String name = Checks.headerName(keyHeader, "@Idempotent(keyHeader) on " + where);
            return name.equalsIgnoreCase(header.name()) ? header : KeySource.rawHeader(name);
        }
        if (!keyPointer.isEmpty()) {
            if (!jsonMapper) {
                throw new IllegalStateException("@Idempotent(keyPointer) on " + where + " reads the key from the JSON"
                    + " body with the application's JsonMapper, and there is none: add micronaut-serde-jackson");
            }
            try {
                return KeySource.bodyMember(keyPointer);
            } catch (IllegalArgumentException e) {
                throw new IllegalStateException("@Idempotent(keyPointer) on " + where + ": " + e.getMessage(), e);
            }
        }
        return header;
    }

    @Nullable
    private static String operation(AnnotationValue<Idempotent> ann, String where) {
        String name = ann.stringValue("operation").orElse("").trim();
        if (name.isEmpty()) {
            return null;
        }
        if (name.length() > 200 || name.startsWith("/") || !name.chars().allMatch(c -> c > 0x20 && c < 0x7f)) {
            throw new IllegalStateException("@Idempotent(operation = \"" + name + "\") on " + where + ": an operation"
                + " name is 1-200 printable ASCII characters without spaces and does not start with '/', e.g."
                + " payments.create");
        }
        return name;
    }

    /**
     * @return the configured and the annotated fingerprint headers, lowercase and each once (a
     *     header named in both places is not fingerprinted twice), as names for lookups
     */
    private static List<CharSequence> headerNames(List<String> configured, List<String> annotated) {
        Set<String> names = new LinkedHashSet<>();
        configured.forEach(h -> names.add(h.toLowerCase(Locale.ROOT)));
        annotated.forEach(h -> names.add(h.toLowerCase(Locale.ROOT)));
        return names.stream().map(HeaderNames::of).toList();
    }

    private Duration duration(AnnotationValue<Idempotent> ann, String member, Duration fallback, String where,
                              boolean zeroAllowed) {
        String text = ann.stringValue(member).orElse("");
        if (text.isBlank()) {
            return fallback;
        }
        Duration d = conversionService.convert(text.trim(), Duration.class).orElseThrow(() ->
            new IllegalStateException("@Idempotent(" + member + " = \"" + text + "\") on " + where
                + " is not a duration; use e.g. 30s, 5m, 24h or PT30S"));
        if (d.isNegative() || (!zeroAllowed && d.isZero())) {
            throw new IllegalStateException("@Idempotent(" + member + " = \"" + text + "\") on " + where
                + " must be " + (zeroAllowed ? "zero or positive" : "positive"));
        }
        return d;
    }
}
