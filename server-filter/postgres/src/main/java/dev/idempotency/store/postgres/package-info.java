/**
 * The PostgreSQL store ({@link dev.idempotency.store.postgres.PostgresIdempotencyStore}) and the
 * transactional outbox ({@link dev.idempotency.store.postgres.PostgresOutboxStore}): how records
 * are kept in one table shared by every instance.
 *
 * <h2>Storage layout</h2>
 * Table {@code idempotency_records} (name and schema configurable), created by the Flyway migrations
 * {@code classpath:db/idempotency/V*.sql} that ship in this jar; one row per store key:
 * <table>
 *   <caption>columns</caption>
 *   <tr><th>column</th><th>type</th><th>meaning</th></tr>
 *   <tr><td>{@code store_key}</td><td>bytea, primary key</td><td>the filter's fixed-length key, a
 *       SHA-256 over (caller, method, route template, Idempotency-Key), as its 32 bytes (any other
 *       key the SPI is given is kept unambiguously too, see {@code StoreKeys}). The raw client key
 *       is never stored.</td></tr>
 *   <tr><td>{@code fingerprint}</td><td>bytea</td><td>the 32-byte SHA-256 request fingerprint (S7);
 *       another fingerprint under the same live key is a mismatch (S9)</td></tr>
 *   <tr><td>{@code fencing_token}</td><td>bigint</td><td>the current holder's token, drawn from the
 *       sequence {@code <table>_fencing_seq} (CACHE 1, so later draws are larger on every
 *       connection). A takeover draws a new one; a release deletes the row, and the next acquire
 *       draws a new one too, so a token is never reused for a key. {@code complete},
 *       {@code release} and {@code renew} act only where it still matches (S12).</td></tr>
 *   <tr><td>{@code holder}</td><td>integer</td><td>how many requests have held this record since it
 *       was created: 1 for the first, +1 per takeover of an expired lease (diagnostics, and how
 *       acquire reports {@code takeover})</td></tr>
 *   <tr><td>{@code completed}</td><td>boolean</td><td>{@code false}: in progress; {@code true}: a stored
 *       response</td></tr>
 *   <tr><td>{@code acquired_at}</td><td>timestamptz</td><td>when the current holder acquired it</td></tr>
 *   <tr><td>{@code expires_at}</td><td>timestamptz</td><td>in progress: the end of the lease (renewed
 *       while the handler runs); completed: the end of the retention. At or after it the record
 *       counts as absent: the next acquire takes it over and the purge may delete it.</td></tr>
 *   <tr><td>{@code response_status}, {@code response_headers}, {@code response_body},
 *       {@code body_omitted}</td><td>smallint, text[], bytea, boolean</td><td>the stored response
 *       (null while in progress, except {@code response_headers}, which then holds the holder's
 *       {@code :trace} entry when its acquire passed one; a CHECK constraint requires them once
 *       completed). Headers are
 *       flattened in order as {@code name, count, value...} per header, so order and repeated
 *       values survive, after two optional entries of the same shape: {@code :trace, 1, traceparent}
 *       (the executing run's trace context, with tracing on) and {@code :reason, 1, phrase} (a reason
 *       phrase of the route's own). No header name starts with a colon. The body is the exact bytes
 *       sent.</td></tr>
 * </table>
 * Indexes: the primary key on {@code store_key}, the only lookup path of acquire, complete,
 * release and renew (the token is checked on the row, so it needs no index); and
 * {@code <table>_expires_at_idx} on {@code expires_at} for the purge's range scan. The table has
 * {@code fillfactor = 100}: renew, complete and takeover all change the indexed {@code expires_at},
 * so no update can be a HOT update and free space kept on each page would serve nothing.
 * The migration's Flyway history is kept in {@code <table>_schema_history}, apart from the
 * application's own migrations, and is applied by the store itself (at startup and before the
 * first call; Flyway serialises concurrent instances with an advisory lock) unless
 * {@code idempotency.store.postgres.migrate=false}.
 *
 * <h2>Statements</h2>
 * Each operation is one prepared statement, one round trip, autocommitted (outside transactional
 * mode) on a connection of the datasource's own pool, never joining an application transaction.
 * Under load, acquires and completions are grouped ({@code StatementBatcher}, group commit): calls
 * that arrive while {@code concurrent-batches} batches of their kind are running wait together,
 * and the next batch runs their statements in one transaction with one commit (acquires after
 * one read of all the batch's records, which alone answers replays, 409s and 422s; completions
 * as one JDBC batch). A call that finds the store idle goes out at once, alone, as described
 * here:
 * <ul>
 *   <li><b>acquire</b>: one statement of data-modifying CTEs that reads the record and, only
 *       when there is none, inserts it ({@code INSERT ... ON CONFLICT DO NOTHING}), or, only when
 *       it has expired, takes it over ({@code UPDATE ... WHERE expires_at <= now}, re-checked on
 *       the latest row version, so of concurrent takeovers exactly one wins). A live record is
 *       only read: a replay, a 409 or a 422 writes, locks and commits nothing. When a concurrent
 *       acquire inserted or took over the record after the statement's snapshot (nothing acquired,
 *       nothing live seen), a second statement decides on the latest committed version:
 *       {@code INSERT ... ON CONFLICT (store_key) DO UPDATE ... RETURNING}, whose update
 *       row-locks that version and rewrites it only when it has expired; {@code RETURNING
 *       fencing_token = currval(sequence)} tells whether it drew the row's token. Transactional
 *       mode uses that second statement directly.</li>
 *   <li><b>complete</b>, <b>renew</b>: {@code UPDATE ... WHERE store_key = ? AND fencing_token = ?
 *       AND NOT completed}; <b>release</b>: the same as {@code DELETE}. No lease check: a holder
 *       whose lease expired but was not taken over may still complete (late completion).</li>
 *   <li><b>purge</b> (scheduled, {@code PostgresStorePurger}): {@code DELETE ... WHERE ctid =
 *       ANY(ARRAY(SELECT ctid ... LIMIT n FOR UPDATE SKIP LOCKED))}, batch by batch, up to a bound
 *       per run; completed records go when their retention ends, in-progress ones a grace period
 *       after their lease ended.</li>
 * </ul>
 * "Now" is always the injected {@link java.time.Clock}, passed as a parameter (never the database clock),
 * so leases and retention follow one time source and tests move it. Timestamps are truncated to
 * microseconds, PostgreSQL's precision.
 *
 * <h2>Threads</h2>
 * No caller waits for a connection or a statement: every operation runs on the store's own
 * bounded executor ({@code idempotency-postgres-N}), and every transaction of transactional mode
 * on a second one, the transactional island ({@code idempotency-tx-N}), where it keeps its thread
 * while the handler runs; both have as many threads as the pool has connections and a bounded
 * queue (see {@code JdbcExecutors}). Stages complete on those threads.
 *
 * <h2>Failures and timeouts</h2>
 * Every statement has the query timeout {@code statement-timeout}; outside transactional mode the
 * connection's network timeout is that plus a second, for a server that stopped answering; the
 * wait for a pooled connection is the store's own {@code connection-timeout} (see
 * {@code ConnectionSource}; in transactional mode the transaction manager takes the connection,
 * so the pool's own timeout applies there). Any
 * {@link java.sql.SQLException} (refused, reset, terminated backend, timeout) becomes an
 * {@link dev.idempotency.server.store.IdempotencyStoreException}, which the filter answers with 503. A wait for a record that
 * another transaction holds uncommitted is bounded by {@code lock-timeout} and answered as in
 * progress. Nothing touches the database in the constructor.
 *
 * <h2>Transactional mode</h2>
 * {@link dev.idempotency.store.postgres.PostgresIdempotencyStore#inTransaction opens a transaction, on an island thread and in the caller's propagated
 * context, with the datasource's Micronaut Data transaction manager ({@code REQUIRES_NEW});
 * Micronaut keeps it in the {@code PropagatedContext}, the filter runs the handler inside it, and the handler's repositories and {@code @Transactional} methods on
 * the same datasource join it. The record's acquire and completion use the transaction's
 * connection, so they commit or roll back with the handler's writes.
 */
package dev.idempotency.store.postgres;
