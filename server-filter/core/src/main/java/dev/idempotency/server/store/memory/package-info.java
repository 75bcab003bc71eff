/**
 * The in-memory store, the default for a single instance: bounded in records and bytes
 * ({@link dev.idempotency.server.store.memory.InMemoryIdempotencyStore} says what it guarantees),
 * and its purge job.
 *
 * <h2>Layout</h2>
 * One map entry per store key, holding the fencing token, the deadline in epoch milliseconds (the
 * lease's end while in progress, the retention's end once completed) and one byte array: the
 * fingerprint, followed once completed by the {@link dev.idempotency.server.store.StoredResponse} in
 * {@code StoredResponseCodec}'s form (status, the omitted flag, the headers, the body), decoded
 * again for each replay. A store key of the filter's form
 * ({@link dev.idempotency.server.store.IdempotencyStore#isDigestKey}) is kept as four {@code long}s, any other as the string
 * itself. A record is five small objects (its map node, its key, itself, its
 * array and, once completed, its node in the eviction queue), about 210 bytes plus its response:
 * a full store is live data the garbage collector copies, so every object saved shortens its
 * pauses. Deadlines are read from the injected
 * {@link java.time.Clock}, so tests move time instead of sleeping. Fencing tokens come from one counter
 * per store, so a token is never reused.
 */
package dev.idempotency.server.store.memory;
