/**
 * The in-memory store, the default for a single instance: bounded in records and bytes, its
 * layout in {@link dev.idempotency.server.store.memory.InMemoryIdempotencyStore}'s javadoc, and
 * its purge job.
 */
package dev.idempotency.server.store.memory;
