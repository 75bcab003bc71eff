/**
 * The HTTP adapter, where a request enters: {@link dev.idempotency.server.http.IdempotencyFilter}
 * decides from the route whether it is covered, reads its key, scope and body within the caps
 * ({@code RequestReader}, {@code BodyReader}), computes the record key and fingerprint, and hands
 * the exchange to the engine's {@code Coordinator}. {@code RoutePolicies} turns each route's
 * {@code @Idempotent} and the configuration into an immutable policy at startup (a bad value
 * stops the application), and {@code IdempotentOperationBinder} binds the operation's identity
 * to route arguments.
 */
package dev.idempotency.server.http;
