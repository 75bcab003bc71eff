/**
 * How the engine reaches the store without blocking: {@code StoreCalls} times every call and
 * feeds the {@code StoreCircuit} (fail fast while the store is down, one probe at a time);
 * {@code RequestLoop} continues each step on the request's event loop, and
 * {@code IdempotencyScheduler} runs the delayed ones (waits, retries, lease renewals).
 */
package dev.idempotency.server.internal.runtime;
