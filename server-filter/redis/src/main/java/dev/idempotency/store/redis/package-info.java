/**
 * The Redis store ({@link dev.idempotency.store.redis.RedisIdempotencyStore}): how it keeps its
 * records in Redis, standalone, behind Sentinel or in a cluster.
 *
 * <h2>Keys</h2>
 * For a store key {@code K} and the configured prefix {@code P} (default {@code idempotency:}),
 * the record is the string {@code P{K}}, and its durable steps (CONTRACT S23), when it has any,
 * the hash {@code P{K}:steps}: one field per step holding its result, and the field {@code ""}
 * holding the latest keep deadline of its steps (8 bytes). {@code {K}} is a Redis Cluster hash
 * tag, so a record and its steps share a slot and one script checks the one and writes the other. The prefix may
 * not contain braces. Keys are sent as UTF-8 bytes; store keys are the filter's fixed-length hex
 * hashes, never the client's raw key.
 *
 * <h2>The record (binary, big-endian)</h2>
 * <pre>
 * offset  size  field
 *      0     1  format, 2
 *      1     1  state: 'P' in progress, 'C' completed, 'R' released
 *      2     8  fencing token
 *     10     8  deadline, epoch ms by the injected Clock: the lease's end in progress, the
 *               retention's end once completed
 *     18     2  fingerprint length n
 *     20     n  fingerprint
 *   20+n  rest  completed records: the response in {@code StoredResponseCodec}'s form
 *               (status, omitted flag, header block, body exactly as sent); in progress: the
 *               holder's W3C traceparent (55 ASCII bytes) when its acquire passed one (CONTRACT
 *               O4), else nothing. Completion, release and takeover cut the record at 20+n.
 * </pre>
 * A released record ('R') is a tombstone that keeps the last fencing token, so the next acquire
 * of the key continues above it.
 *
 * <h2>Time, deadlines and TTLs</h2>
 * Every decision (is the lease live, is the retention over, how long does the lease still run)
 * compares the {@code deadline} with "now" read from the injected {@link java.time.Clock}, never with
 * Redis' clock, so tests move time instead of sleeping and all instances decide alike. Redis
 * TTLs only collect garbage, and are relative durations set at each write, so a clock that is
 * offset from real time (or runs faster, like a test clock) never makes a record vanish before
 * its deadline:
 * <ul>
 *   <li>in progress (acquire, renew): TTL = lease + {@code late-completion-window} (default
 *       24 h). The record must outlive its lease: a holder whose lease expired but was not taken
 *       over may still complete or release it (the SPI's late-completion rule), while an acquire
 *       already treats it as over and takes it over. After the window Redis deletes it and a
 *       very late completion returns {@code false};</li>
 *   <li>completed: TTL = retention + {@code expiry-grace} (default 1 min), so Redis removes it
 *       shortly after its retention (CONTRACT S16); until then an acquire past the deadline
 *       treats it as over and overwrites it;</li>
 *   <li>released: the tombstone lives for {@code expiry-grace} (with a zero grace the release
 *       deletes the record). Its holder released it, and a holder that was taken over before
 *       finds no in-progress record with its token either way, so the tombstone only keeps the
 *       token for an acquire that follows soon (CONTRACT S16: no key outlives its record by more
 *       than the grace).</li>
 * </ul>
 *
 * <h2>Fencing tokens</h2>
 * A new record's token comes from the acquiring instance's clock: epoch milliseconds times 1024
 * plus ten random bits. Taking over a record (or a tombstone) gives the larger of that and the
 * record's token plus one, decided by the script. Tokens of one key therefore strictly increase
 * while any record of it exists, and across its disappearance as long as the instances' clocks
 * agree to within the time Redis kept the last record (at least {@code expiry-grace}, a minute
 * by default). A token is only ever compared for equality with the record's own, so a late
 * holder can never complete a record that was re-created after its own disappeared.
 *
 * <h2>Connection, threads and failures</h2>
 * The store talks to Redis through Lettuce's asynchronous API with a byte-array codec, on
 * connections of its own opened on first use (not in the constructor) with
 * {@code connectAsync}: no call ever blocks a thread. A call made on an event loop uses a
 * connection of that loop, so it is written and answered on the calling thread (see
 * {@code RedisConnector}); the application's client itself is never changed.
 * {@code command-timeout} bounds each call, the connect included, by a periodic check instead
 * of a timer per command ({@code CommandDeadlines}): an event loop checks its own connection's
 * calls, and one check on a Lettuce thread covers the rest. Any Lettuce failure (connection
 * refused or lost, timeout, error reply) and any record that cannot be decoded fails the stage with an
 * {@link dev.idempotency.server.store.IdempotencyStoreException}. While a connection is down, calls fail at once; a failed
 * connect is tried again on the next call, and an established connection reconnects by itself
 * (Lettuce's reconnect backoff).
 *
 * <h2>Replicas and failovers (CONTRACT S24)</h2>
 * With {@code wait-replicas} N &gt; 0, every write is followed by {@code WAIT N timeout} on the
 * same connection ({@code ReplicaWait}), so a failover to a replica that confirmed it cannot lose
 * it. An acquire that fewer replicas confirm is released and fails with an
 * {@link dev.idempotency.server.store.IdempotencyStoreException} (the handler does not run); a completion, renewal or step
 * that fewer confirm is waited for twice more, then kept, logged and counted
 * ({@link dev.idempotency.store.redis.RedisIdempotencyStore#underReplicatedWrites()}); a {@code WAIT} lost with its connection fails the write,
 * to be sent again. With a {@code redis-sentinel://} URI the connections are opened to the
 * primary the sentinels name, on every (re)connect; no connection ever reads from a replica.
 *
 * <h2>Inspection (CONTRACT O3)</h2>
 * {@link dev.idempotency.store.redis.RedisIdempotencyStore#find} reads the first bytes of one record and its length ({@code GETRANGE},
 * {@code STRLEN}), never its body. {@link dev.idempotency.store.redis.RedisIdempotencyStore#counts} and {@link dev.idempotency.store.redis.RedisIdempotencyStore#inProgressStartedBefore} walk the
 * keyspace with {@code SCAN ... MATCH P{*} COUNT 1000} (every node of a cluster) and read each
 * record's first bytes the same way: about two commands per record, pipelined, for an
 * operator's question, not for polling; a walk stops after 1,000,000
 * records and says so ({@link dev.idempotency.server.store.RecordCounts#complete()}). A record's start time is read from its
 * fencing token, which is the acquiring instance's clock in milliseconds times 1024. The size
 * reported is the server's ({@code INFO memory}: used and maximum memory; {@code DBSIZE}),
 * shared with whatever else the Redis holds.
 *
 */
package dev.idempotency.store.redis;
