/**
 * The filter's public surface: what an application annotates, configures and implements.
 * <ul>
 *   <li>{@link dev.idempotency.server.Idempotent}: marks the operations the filter covers;</li>
 *   <li>{@link dev.idempotency.server.IdempotencyConfiguration} and its properties class: the
 *       {@code idempotency.*} settings;</li>
 *   <li>{@link dev.idempotency.server.IdempotentOperation}: the identity of the operation a
 *       handler runs for (a route argument, or {@code IdempotentOperation.current()});</li>
 *   <li>{@link dev.idempotency.server.CallerIdentityResolver}: the SPI that says who the caller
 *       is;</li>
 *   <li>{@link dev.idempotency.server.ProblemCode}: the problem codes.</li>
 * </ul>
 * The filter itself is {@link dev.idempotency.server.http.IdempotencyFilter}; stores implement
 * {@link dev.idempotency.server.store.IdempotencyStore}. Packages under
 * {@code dev.idempotency.server.internal} are the implementation: not an API, they change without
 * notice.
 *
 * <h2>Layers</h2>
 * A package imports only packages below it, never one above (the build checks it):
 * {@code internal.config}, {@code internal.management}; {@code http}; {@code internal.engine};
 * {@code internal.response}; {@code internal.runtime}; {@code internal.telemetry};
 * {@code internal.fingerprint}; {@code store.memory}; {@code store}; this package;
 * {@code internal.util}.
 */
package dev.idempotency.server;
