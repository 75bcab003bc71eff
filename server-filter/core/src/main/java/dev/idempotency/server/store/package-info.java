/**
 * The store SPI: {@link dev.idempotency.server.store.IdempotencyStore} (asynchronous, atomic
 * acquire with a sealed {@link dev.idempotency.server.store.AcquireResult}, fenced completion),
 * its blocking and transactional variants, what a record holds
 * ({@link dev.idempotency.server.store.StoredResponse} and its codec) and the inspection the
 * management endpoint reads. Stores live in their own packages and modules:
 * {@code store.memory} here, Redis and PostgreSQL in theirs.
 */
package dev.idempotency.server.store;
