package dev.idempotency.server.internal.engine;

import dev.idempotency.server.internal.fingerprint.JsonPointers;
import io.micronaut.core.annotation.Internal;
import io.micronaut.core.annotation.Nullable;

import java.time.Duration;
import java.util.List;

/**
 * The effective contract of one route: {@link Idempotent} members merged over the configuration.
 *
 * @param required            whether a missing key is rejected
 * @param lease               the in-progress lease
 * @param retention           how long results are kept
 * @param inFlightWait        how long a duplicate waits for the original ({@code ZERO}: 409 at once)
 * @param failOpen            whether to run without idempotency when the store fails
 * @param ignoredJsonPointers members left out of the fingerprint, compiled
 * @param fingerprintHeaders  request headers included in the fingerprint, lowercase, each once, made
 *                            for per-request lookups ({@link HeaderNames}; {@code toString} is the name)
 * @param template            the route's URI template, part of the scope
 * @param transactional       whether acquire, handler and completion share one store transaction (S18)
 * @param latency             how long the route's handler usually takes here, for {@code Retry-After} (S11)
 * @param keepSteps           whether a released execution keeps its durable steps for the next one (S23)
 * @param explicit            whether {@code @Idempotent} is on the route's method itself, which covers that
 *                            method whatever {@code idempotency.methods} says (S2)
 * @param keySource           where its requests carry the key (S4)
 * @param operation           the route's explicit operation name, which replaces method and template in
 *                            the scope (S6), or {@code null}
 */
@Internal
public record RoutePolicy(boolean required, Duration lease, Duration retention, Duration inFlightWait,
                   boolean failOpen, JsonPointers ignoredJsonPointers, List<CharSequence> fingerprintHeaders,
                   String template, boolean transactional, RouteLatency latency, boolean keepSteps,
                   boolean explicit, KeySource keySource, @Nullable String operation) {

    /** @return the operation part of the scope: the explicit name, else {@code method template} */
    public String scopeOperation(String method) {
        return operation != null ? operation : method + ' ' + template;
    }
}
