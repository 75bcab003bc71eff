package dev.idempotency.server;

import io.micronaut.http.HttpRequest;

import java.util.Optional;

/**
 * Tells who the caller of a request is, so that idempotency keys are scoped per caller
 * (CONTRACT S6). Define one bean to take precedence over the authenticated principal; when it
 * returns empty the filter falls back to the principal, then to the anonymous scope.
 *
 * <p>Called for every covered request on the thread the filter runs on, usually an event-loop
 * thread of the server: it must be thread-safe and must not block (no database or remote
 * lookups; read what the request or an earlier filter already holds). Return a stable
 * identifier (an account or API-key id), never a secret: it is hashed into the store key but
 * may be logged by the application itself.
 */
@FunctionalInterface
public interface CallerIdentityResolver {

    /**
     * @param request the request
     * @return the caller's identity, or empty to fall back to the principal
     */
    Optional<String> resolve(HttpRequest<?> request);
}
