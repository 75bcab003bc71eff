package dev.idempotency.server.internal.engine;

import io.micronaut.core.propagation.PropagatedContext;

import java.time.Duration;

/**
 * A record this instance holds: the key, the fencing token the store issued with it, and how
 * long the lease lasts without renewal. Completion, release and renewal act only with it.
 *
 * @param key      the record
 * @param token    the fencing token
 * @param duration the lease
 * @param request  the propagated context of the request that holds it: its store calls' spans are children of its span
 */
record Lease(RecordKey key, long token, Duration duration, PropagatedContext request) {
}
