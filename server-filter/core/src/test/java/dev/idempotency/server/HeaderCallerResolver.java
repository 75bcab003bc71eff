package dev.idempotency.server;

import io.micronaut.context.annotation.Requires;
import io.micronaut.http.HttpRequest;
import jakarta.inject.Singleton;

import java.util.Optional;

/** Identifies callers by an {@code X-Caller} header, as an API-key resolver would. */
@Singleton
@Requires(property = "spec.name", value = "IdempotencyFilterTest")
class HeaderCallerResolver implements CallerIdentityResolver {

    @Override
    public Optional<String> resolve(HttpRequest<?> request) {
        return request.getHeaders().get("X-Caller", String.class);
    }
}
