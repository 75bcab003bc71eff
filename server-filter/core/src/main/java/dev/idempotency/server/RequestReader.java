package dev.idempotency.server;

import io.micronaut.context.annotation.Requires;
import io.micronaut.core.annotation.Nullable;
import io.micronaut.http.HttpHeaders;
import io.micronaut.http.HttpRequest;
import io.micronaut.http.MutableHttpResponse;
import jakarta.inject.Singleton;

import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;

/**
 * Turns a covered request into what its record is filed under, or into the problem that stops
 * it (CONTRACT S3-S8): the key from the header (400 when missing on a required route, or
 * malformed), the body read within the cap (413 past it), the scope from the caller and the
 * route, and then, in one SHA-256 pass ({@link RequestDigest}), the store key and the
 * fingerprint. Nothing here touches the store.
 */
@Singleton
@Requires(property = IdempotencyConfigurationProperties.PREFIX + ".enabled", notEquals = "false")
final class RequestReader {

    private final IdempotencyConfiguration config;
    private final Responses responses;
    private final Report report;
    @Nullable
    private final CallerIdentityResolver callerResolver;

    RequestReader(IdempotencyConfiguration config, Responses responses, Report report,
                  @Nullable CallerIdentityResolver callerResolver) {
        this.config = config;
        this.responses = responses;
        this.report = report;
        this.callerResolver = callerResolver;
    }

    /** What reading a request gave. */
    sealed interface Reading {

        /** No key on a route where it is optional: the request runs without idempotency. */
        record Unprotected() implements Reading {
        }

        /** The request is answered with {@code response} and goes no further. */
        record Rejected(MutableHttpResponse<?> response) implements Reading {
        }

        /** The request's record and fingerprint. */
        record Ready(RecordKey key, byte[] fingerprint) implements Reading {
        }
    }

    CompletableFuture<Reading> read(HttpRequest<?> request, RoutePolicy policy) {
        List<String> values = request.getHeaders().getAll(config.getHeaderName());
        if (values.isEmpty()) {
            return done(policy.required() ? reject(responses.keyMissing()) : new Reading.Unprotected());
        }
        if (values.size() > 1) {
            return done(reject(responses.keyRepeated(values.size())));
        }
        IdempotencyKey key;
        try {
            key = IdempotencyKey.parse(values.get(0), config.isStrict());
        } catch (InvalidIdempotencyKeyException e) {
            return done(reject(responses.keyInvalid(e.getMessage())));
        }
        String scope = scope(request, policy);
        CompletableFuture<BodyReader.Body> body;
        try {
            body = BodyReader.read(request, config.getMaxRequestBodySize()).toCompletableFuture();
        } catch (RuntimeException e) {
            body = CompletableFuture.failedFuture(e);
        }
        return body.handle((b, failure) -> {
            if (failure != null) {
                if (BodyReader.tooLarge(failure)) {
                    return reject(responses.bodyTooLarge());
                }
                throw failure instanceof CompletionException c ? c : new CompletionException(failure);
            }
            RequestDigest digest = RequestDigest.begin(scope, key.value());
            byte[] fingerprint = digest.fingerprint(parts(request, policy), request.getHeaders().get(HttpHeaders.CONTENT_TYPE),
                b.bytes(), b.length());
            return new Reading.Ready(new RecordKey(digest.storeKey()), fingerprint);
        });
    }

    private Reading reject(MutableHttpResponse<?> response) {
        report.rejected();
        return new Reading.Rejected(response);
    }

    /** Caller identity (resolver, else principal, else the anonymous scope), method and route template (S6). */
    private String scope(HttpRequest<?> request, RoutePolicy policy) {
        String caller = null;
        if (callerResolver != null) {
            caller = callerResolver.resolve(request).map(c -> "caller:" + c).orElse(null);
        }
        if (caller == null) {
            caller = request.getUserPrincipal().map(p -> "principal:" + p.getName())
                .orElse("anonymous:" + config.getAnonymousScope());
        }
        return caller + '\n' + request.getMethodName() + '\n' + policy.template();
    }

    private static RequestFingerprint parts(HttpRequest<?> request, RoutePolicy policy) {
        RequestFingerprint f = RequestFingerprint.of(request.getMethodName(), request.getPath())
            .ignoring(policy.ignoredJsonPointers());
        request.getParameters().forEach(f::query);
        for (String h : policy.fingerprintHeaders()) {
            f.header(h, request.getHeaders().getAll(h));
        }
        return f;
    }

    private static CompletableFuture<Reading> done(Reading reading) {
        return CompletableFuture.completedFuture(reading);
    }
}
