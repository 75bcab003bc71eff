/**
 * The filter's implementation, not an API: types here are public only because a package below
 * or beside needs them ({@code @Internal}), and change without notice. The request's path:
 * {@code http} (the adapter) hands an exchange to {@code internal.engine} (one acquire loop,
 * then an execution mode, then settlement), which captures the response through
 * {@code internal.response} and calls the store through {@code internal.runtime} (timed calls,
 * the store circuit, the scheduler); {@code internal.fingerprint} computes the record key and
 * the fingerprint; {@code internal.telemetry} counts and logs; {@code internal.management} and
 * {@code internal.config} sit on top (health, the management endpoint, which store is used).
 */
package dev.idempotency.server.internal;
