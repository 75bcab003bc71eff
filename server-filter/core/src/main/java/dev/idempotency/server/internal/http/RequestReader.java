package dev.idempotency.server.internal.http;

import dev.idempotency.server.CallerIdentityResolver;
import dev.idempotency.server.IdempotencyConfiguration;
import dev.idempotency.server.IdempotencyConfigurationProperties;
import dev.idempotency.server.IdempotentOperation;
import dev.idempotency.server.internal.engine.KeySource;
import dev.idempotency.server.internal.engine.RecordKey;
import dev.idempotency.server.internal.engine.Report;
import dev.idempotency.server.internal.engine.RoutePolicy;
import dev.idempotency.server.internal.fingerprint.KeyHeader;
import dev.idempotency.server.internal.fingerprint.MalformedKeyException;
import dev.idempotency.server.internal.fingerprint.RequestDigest;
import dev.idempotency.server.internal.fingerprint.RequestFingerprint;
import dev.idempotency.server.internal.fingerprint.UnreadableBodyException;
import dev.idempotency.server.internal.response.Attributes;
import dev.idempotency.server.internal.response.HeaderNames;
import dev.idempotency.server.internal.response.Responses;
import dev.idempotency.server.internal.telemetry.FilterLog;
import io.micronaut.context.annotation.Requires;
import io.micronaut.core.annotation.Internal;
import io.micronaut.core.annotation.Nullable;
import io.micronaut.http.BasicHttpAttributes;
import io.micronaut.http.HttpRequest;
import io.micronaut.http.MutableHttpResponse;
import io.micronaut.json.JsonMapper;
import jakarta.inject.Singleton;

import java.net.URLEncoder;
import java.nio.charset.StandardCharsets;
import java.security.Principal;
import java.util.List;
import java.util.Optional;
import java.util.TreeMap;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;

/**
 * Turns a covered request into what its record is filed under, or into the problem that stops
 * it (CONTRACT S3-S8): the key from where the route takes it (the header, another header, a JSON
 * body member; 400 when missing on a required route, or malformed), the body read within the cap
 * (413 past it, 400 when it cannot be read or inflated, or is not the multipart body its
 * Content-Type says), the scope from the caller and the route (or its operation name), and then,
 * in one SHA-256 pass ({@link RequestDigest}), the store key and the fingerprint. Nothing here
 * touches the store.
 */
@Internal
@Singleton
@Requires(property = IdempotencyConfigurationProperties.PREFIX + ".enabled", notEquals = "false")
public final class RequestReader {

    private final IdempotencyConfiguration config;
    private final Responses responses;
    private final Report report;
    @Nullable
    private final CallerIdentityResolver callerResolver;
    private final Caller anonymous;
    private final CharSequence keyHeader;
    private final BodyKey.Parser bodyKeys;

    public RequestReader(IdempotencyConfiguration config, Responses responses, Report report,
                  @Nullable CallerIdentityResolver callerResolver, @Nullable JsonMapper json) {
        this.config = config;
        this.responses = responses;
        this.report = report;
        this.callerResolver = callerResolver;
        this.bodyKeys = BodyKey.parser(json);
        this.anonymous = new Caller(RequestDigest.CALLER_ANONYMOUS, config.getAnonymousScope());
        this.keyHeader = HeaderNames.of(config.getHeaderName());
    }

    /** What reading a request gave. */
    public sealed interface Reading {

        /** No key on a route where it is optional: the request runs without idempotency. */
        record Unprotected() implements Reading {
        }

        /** The request is answered with {@code response} and goes no further. */
        record Rejected(MutableHttpResponse<?> response) implements Reading {
        }

        /** The request's record, fingerprint and operation identity. */
        record Ready(RecordKey key, byte[] fingerprint, IdempotentOperation operation) implements Reading {
        }
    }

    public CompletableFuture<Reading> read(HttpRequest<?> request, RoutePolicy policy) {
        KeySource source = policy.keySource();
        KeyHeader key = null;
        if (source.kind() != KeySource.Kind.BODY_MEMBER) {
            List<String> values = request.getHeaders().getAll(source.kind() == KeySource.Kind.HEADER ? keyHeader
                : source.name());
            if (values.isEmpty()) {
                return done(policy.required() ? reject(request, policy, keyMissing(source)) : new Reading.Unprotected());
            }
            if (values.size() > 1) {
                return done(reject(request, policy, responses.keyRepeated(source.name(), values.size())));
            }
            try {
                key = source.kind() == KeySource.Kind.HEADER ? KeyHeader.parse(values.get(0), config.isStrict())
                    : new KeyHeader(values.get(0).trim());
            } catch (MalformedKeyException e) {
                return done(reject(request, policy, keyInvalid(source, e.getMessage())));
            }
        }
        KeyHeader headerKey = key;
        Caller caller = caller(request);
        CompletableFuture<BodyReader.Body> body;
        try {
            body = BodyReader.read(request, config.getMaxRequestBodySize()).toCompletableFuture();
        } catch (RuntimeException e) {
            body = CompletableFuture.failedFuture(e);
        }
        return body.handle((b, failure) -> {
            if (failure != null) {
                return unreadable(request, policy, failure);
            }
            String contentType = request.getHeaders().get(HeaderNames.CONTENT_TYPE);
            KeyHeader k = headerKey;
            if (k == null) {
                BodyKey found = BodyKey.find(bodyKeys, source, contentType, b.bytes(), b.length());
                if (found.key() == null) {
                    if (found.problem() == null) {
                        return policy.required() ? reject(request, policy, keyMissing(source)) : new Reading.Unprotected();
                    }
                    return reject(request, policy, keyInvalid(source, found.problem()));
                }
                k = found.key();
            }
            // the scope (S6): caller, then method and route template, or the route's operation name; then the key
            String operation = policy.operation();
            RequestDigest digest = RequestDigest.begin(caller.kind(), caller.id(),
                operation == null ? request.getMethodName() : "", operation == null ? policy.template() : operation,
                k.value());
            byte[] fingerprint;
            try {
                fingerprint = digest.fingerprint(parts(request, policy), contentType, b.bytes(), b.length());
            } catch (UnreadableBodyException e) {
                if (FilterLog.LOG.isDebugEnabled()) {
                    FilterLog.LOG.debug("idempotency: the body of {} {} is not what its Content-Type says ({}): answering"
                        + " 400", request.getMethodName(), request.getPath(), e.getMessage());
                }
                return reject(request, policy, responses.bodyMalformed(e.getMessage()));
            }
            String storeKey = digest.storeKey();
            return new Reading.Ready(new RecordKey(storeKey), fingerprint, new IdempotentOperation(k.value(),
                caller.kindName() + ':' + caller.id() + ' ' + policy.scopeOperation(request.getMethodName()), storeKey));
        });
    }

    /**
     * A body that could not be read is the client's problem, never a 500 (S8), and is decided
     * before the store is touched, so the key stays free for a readable retry. A client that went
     * away is not worth more than a DEBUG line; a stream that failed for another reason is.
     */
    private Reading unreadable(HttpRequest<?> request, RoutePolicy policy, Throwable failure) {
        Throwable cause = failure instanceof CompletionException && failure.getCause() != null ? failure.getCause() : failure;
        return switch (BodyReader.classify(cause)) {
            case TOO_LARGE -> reject(request, policy, responses.bodyTooLarge());
            case ABORTED -> {
                if (FilterLog.LOG.isDebugEnabled()) {
                    FilterLog.LOG.debug("idempotency: the client ended {} {} before its body was read ({})",
                        request.getMethodName(), request.getPath(), cause.toString());
                }
                yield reject(request, policy, responses.bodyUnreadable());
            }
            case NOT_DECODABLE -> {
                if (FilterLog.LOG.isDebugEnabled()) {
                    FilterLog.LOG.debug("idempotency: the body of {} {} does not decompress ({}): answering 400",
                        request.getMethodName(), request.getPath(), cause.toString());
                }
                yield reject(request, policy, responses.bodyNotDecodable());
            }
            case BROKEN -> {
                FilterLog.LOG.warn("idempotency: could not read the body of {} {}: answering 400",
                    request.getMethodName(), request.getPath(), cause);
                yield reject(request, policy, responses.bodyUnreadable());
            }
        };
    }

    /** 400 {@code idempotency-key-missing}, saying where the route takes its key from (S3, S4). */
    private MutableHttpResponse<?> keyMissing(KeySource source) {
        return switch (source.kind()) {
            case HEADER -> responses.keyMissing();
            case RAW_HEADER -> responses.keyMissing("This operation takes its key from the " + source.name()
                + " header, and this request has none: send the delivery's or operation's unique id there, the same"
                + " on every retry.");
            case BODY_MEMBER -> responses.keyMissing("This operation takes its key from the member " + source.name()
                + " of a JSON body (Content-Type application/json), and this request has none: send one unique string"
                + " (e.g. a UUIDv4) there per operation, the same on every retry.");
        };
    }

    /** 400 {@code idempotency-key-invalid}: {@code reason}, without the key itself (S5). */
    private MutableHttpResponse<?> keyInvalid(KeySource source, String reason) {
        if (source.kind() == KeySource.Kind.HEADER) {
            return responses.keyInvalid(reason);
        }
        return responses.keyInvalidDetail("The key in " + source.describe() + " is not valid: "
            + reason.replace("the Idempotency-Key", "the key") + ". A key is 1 to 255 printable ASCII characters.");
    }

    private Reading reject(HttpRequest<?> request, RoutePolicy policy, MutableHttpResponse<?> response) {
        report.rejected(request, policy);
        return new Reading.Rejected(response);
    }

    /** The caller part of the scope (S6): the resolver's identity, else the principal, else the anonymous scope. */
    private record Caller(byte kind, String id) {
        /** @return how the caller was identified, the first part of {@link IdempotentOperation#scope()} */
        String kindName() {
            return switch (kind) {
                case RequestDigest.CALLER_RESOLVED -> "caller";
                case RequestDigest.CALLER_PRINCIPAL -> "principal";
                default -> "anonymous";
            };
        }
    }

    private Caller caller(HttpRequest<?> request) {
        if (callerResolver != null) {
            Optional<String> resolved = callerResolver.resolve(request);
            if (resolved.isPresent()) {
                return new Caller(RequestDigest.CALLER_RESOLVED, resolved.get());
            }
        }
        Principal principal = Attributes.principal(request);
        return principal != null ? new Caller(RequestDigest.CALLER_PRINCIPAL, principal.getName()) : anonymous;
    }

    private static RequestFingerprint parts(HttpRequest<?> request, RoutePolicy policy) {
        RequestFingerprint f = (policy.operation() == null ? RequestFingerprint.of(request.getMethodName(), request.getPath())
            : RequestFingerprint.of("", operationPath(request, policy.operation()))).ignoring(policy.ignoredJsonPointers());
        String query = request.getUri().getRawQuery();
        if (query != null && !query.isEmpty()) { // decoding parameters costs even when there are none
            request.getParameters().forEach(f::query);
        }
        List<CharSequence> headers = policy.fingerprintHeaders();
        for (int i = 0; i < headers.size(); i++) { // no iterator for the usual empty list
            CharSequence name = headers.get(i);
            f.header(name.toString(), request.getHeaders().getAll(name));
        }
        return f;
    }

    /**
     * What stands for method and path in the fingerprint of a route with an operation name (S6,
     * S7): the name and the route's path variables, by name, so the same request on a renamed
     * route (another path, the same variables) is the same request.
     */
    private static String operationPath(HttpRequest<?> request, String operation) {
        StringBuilder path = new StringBuilder(operation);
        BasicHttpAttributes.getRouteMatchInfo(request).ifPresent(match ->
            new TreeMap<>(match.getVariableValues()).forEach((name, value) -> path.append('\n').append(name).append('=')
                .append(URLEncoder.encode(String.valueOf(value), StandardCharsets.UTF_8))));
        return path.toString();
    }

    private static CompletableFuture<Reading> done(Reading reading) {
        return CompletableFuture.completedFuture(reading);
    }
}
