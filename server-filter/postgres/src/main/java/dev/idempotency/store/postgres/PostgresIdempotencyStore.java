package dev.idempotency.store.postgres;

import dev.idempotency.server.Checks;
import dev.idempotency.server.store.AcquireResult;
import dev.idempotency.server.store.IdempotencyStoreException;
import dev.idempotency.server.store.memory.InMemoryIdempotencyStore;
import dev.idempotency.server.store.RecordCounts;
import dev.idempotency.server.store.RecordInfo;
import dev.idempotency.server.store.StoreInspection;
import dev.idempotency.server.store.StoredResponse;
import dev.idempotency.server.store.TransactionalIdempotencyStore;
import io.micronaut.context.BeanLocator;
import io.micronaut.context.annotation.Replaces;
import io.micronaut.context.annotation.Requires;
import io.micronaut.context.event.StartupEvent;
import io.micronaut.core.type.Argument;
import io.micronaut.core.util.SupplierUtil;
import io.micronaut.data.connection.jdbc.advice.DelegatingDataSource;
import io.micronaut.inject.qualifiers.Qualifiers;
import io.micronaut.runtime.event.annotation.EventListener;
import io.micronaut.transaction.TransactionDefinition;
import io.micronaut.transaction.TransactionOperations;
import io.micronaut.transaction.TransactionStatus;
import jakarta.annotation.PreDestroy;
import jakarta.inject.Inject;
import jakarta.inject.Singleton;
import org.flywaydb.core.api.FlywayException;
import org.postgresql.jdbc.PgStatement;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import javax.sql.DataSource;
import java.security.MessageDigest;
import java.sql.Array;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.time.Clock;
import java.time.Duration;
import java.time.Instant;
import java.time.OffsetDateTime;
import java.time.ZoneOffset;
import java.time.temporal.ChronoUnit;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Optional;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.Executor;
import java.util.concurrent.TimeUnit;
import java.util.function.Function;
import java.util.function.Supplier;

/**
 * The PostgreSQL idempotency store (CONTRACT S10-S17, S18, S19): records in one table shared by
 * every application instance, reached through a Micronaut datasource (HikariCP) and, in
 * transactional mode, through that datasource's Micronaut Data transaction manager. Select it with
 * {@code idempotency.store.type=postgres} (or, with no type set,
 * {@code idempotency.store.postgres.enabled=true}); it then replaces the in-memory store.
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
 *       (null while in progress; a CHECK constraint requires them once completed). Headers are
 *       flattened in order as {@code name, count, value...} per header, so order and repeated
 *       values survive; the body is the exact bytes sent.</td></tr>
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
 * Under load, acquires and completions are grouped ({@link StatementBatcher}, group commit): calls
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
 *   <li><b>purge</b> (scheduled, {@link PostgresStorePurger}): {@code DELETE ... WHERE ctid =
 *       ANY(ARRAY(SELECT ctid ... LIMIT n FOR UPDATE SKIP LOCKED))}, batch by batch, up to a bound
 *       per run; completed records go when their retention ends, in-progress ones a grace period
 *       after their lease ended.</li>
 * </ul>
 * "Now" is always the injected {@link Clock}, passed as a parameter (never the database clock),
 * so leases and retention follow one time source and tests move it. Timestamps are truncated to
 * microseconds, PostgreSQL's precision.
 *
 * <h2>Threads</h2>
 * No caller waits for a connection or a statement: every operation runs on the store's own
 * bounded executor ({@code idempotency-postgres-N}), and every transaction of transactional mode
 * on a second one, the transactional island ({@code idempotency-tx-N}), where it keeps its thread
 * while the handler runs; both have as many threads as the pool has connections and a bounded
 * queue (see {@link JdbcExecutors}). Stages complete on those threads.
 *
 * <h2>Failures and timeouts</h2>
 * Every statement has the query timeout {@code statement-timeout}; outside transactional mode the
 * connection's network timeout is that plus a second, for a server that stopped answering; the
 * wait for a pooled connection is the store's own {@code connection-timeout} (see
 * {@link ConnectionSource}; in transactional mode the transaction manager takes the connection,
 * so the pool's own timeout applies there). Any
 * {@link SQLException} (refused, reset, terminated backend, timeout) becomes an
 * {@link IdempotencyStoreException}, which the filter answers with 503. A wait for a record that
 * another transaction holds uncommitted is bounded by {@code lock-timeout} and answered as in
 * progress. Nothing touches the database in the constructor.
 *
 * <h2>Transactional mode</h2>
 * {@link #inTransaction} opens a transaction, on an island thread and in the caller's propagated
 * context, with the datasource's Micronaut Data transaction manager ({@code REQUIRES_NEW});
 * Micronaut keeps it in the {@code PropagatedContext}, the filter runs the handler inside it, and the handler's repositories and {@code @Transactional} methods on
 * the same datasource join it. The record's acquire and completion use the transaction's
 * connection, so they commit or roll back with the handler's writes.
 */
@Singleton
@Replaces(InMemoryIdempotencyStore.class)
@Requires(condition = PostgresStoreSelected.class)
public final class PostgresIdempotencyStore implements TransactionalIdempotencyStore, StoreInspection {

    /** How long an operator's inspection query may run (CONTRACT O3). */
    static final int INSPECTION_TIMEOUT_SECONDS = 60;

    private static final Logger LOG = LoggerFactory.getLogger(PostgresIdempotencyStore.class);
    private static final String LOCK_NOT_AVAILABLE = "55P03";
    private static final Executor SAME_THREAD = Runnable::run;

    private final PostgresStoreConfiguration config;
    private final Clock clock;
    private final Supplier<DataSource> dataSource;
    private final Supplier<TransactionOperations<Connection>> transactions;
    private final PostgresSql sql;
    private final PostgresSchemaMigrator migrator;
    private final long statementTimeoutMillis;
    private final String lockTimeoutMillis;
    private final JdbcExecutors executors;
    private final ConnectionSource connections;
    private final StatementBatcher<AcquireCall, AcquireResult> acquires;
    private final StatementBatcher<CompleteCall, Boolean> completes;
    /**
     * The rows the purge's next batch deletes: {@code purge-batch-size}, halved after a batch
     * that ran past the statement timeout (down to {@link #MIN_PURGE_BATCH}, or the configured
     * size if smaller), doubled back after each run without one. Written by the purge only (one
     * run at a time per instance).
     */
    private volatile int nextPurgeBatch;

    /** The smallest batch the purge shrinks to after timeouts. */
    static final int MIN_PURGE_BATCH = 10;
    /** SQL state of a statement PostgreSQL cancelled (here: its statement_timeout ran out). */
    private static final String QUERY_CANCELED = "57014";
    /**
     * How long past its statement timeout the purge waits for PostgreSQL's answer before it gives
     * the connection up: the server ends the statement itself, so this is a last resort.
     */
    private static final int PURGE_NETWORK_GRACE_MILLIS = 5000;

    /** A batch of completions stops growing past this many body bytes (its first call always fits). */
    private static final long MAX_COMPLETE_BATCH_BYTES = 1 << 20;

    @Inject
    PostgresIdempotencyStore(PostgresStoreConfiguration config, Clock clock, BeanLocator beans) {
        this(config, clock,
            () -> DelegatingDataSource.unwrapDataSource(
                beans.getBean(DataSource.class, Qualifiers.byName(config.getDatasource()))),
            () -> beans.getBean(Argument.of(TransactionOperations.class, Connection.class),
                Qualifiers.byName(config.getDatasource())));
    }

    /**
     * @param config       the settings
     * @param clock        the time source for leases and retention
     * @param dataSource   the connection pool (not transaction-aware), looked up on first use
     * @param transactions the datasource's transaction manager, looked up on first use
     */
    @SuppressWarnings({"unchecked", "rawtypes"})
    PostgresIdempotencyStore(PostgresStoreConfiguration config, Clock clock, Supplier<DataSource> dataSource,
                             Supplier<? extends TransactionOperations> transactions) {
        this.config = Objects.requireNonNull(config, "config");
        this.clock = Objects.requireNonNull(clock, "clock");
        if (config.getLockTimeout().compareTo(config.getStatementTimeout()) >= 0) {
            throw new IllegalArgumentException(PostgresStoreConfigurationProperties.PREFIX + ".lock-timeout ("
                + config.getLockTimeout() + ") must be shorter than " + PostgresStoreConfigurationProperties.PREFIX
                + ".statement-timeout (" + config.getStatementTimeout() + ")");
        }
        this.dataSource = SupplierUtil.memoized(dataSource);
        this.transactions = (Supplier<TransactionOperations<Connection>>) (Supplier) SupplierUtil.memoized(transactions);
        String table = config.getSchema() == null ? config.getTableName()
            : config.getSchema() + "." + config.getTableName();
        this.sql = new PostgresSql(table);
        this.migrator = new PostgresSchemaMigrator(config, this.dataSource);
        this.statementTimeoutMillis = Math.max(1, config.getStatementTimeout().toMillis());
        this.lockTimeoutMillis = Long.toString(Math.max(1, config.getLockTimeout().toMillis()));
        this.nextPurgeBatch = config.getPurgeBatchSize();
        this.executors = new JdbcExecutors(config, this.dataSource);
        this.connections = new ConnectionSource(this.dataSource, config.getConnectionTimeout());
        this.acquires = new StatementBatcher<>("acquire", executors::tryStatement,
            calls -> autocommit("acquire", c -> acquireBatch(c, calls)), call -> 1,
            this::concurrentBatches, config.getMaxBatchSize(), Long.MAX_VALUE, config.getQueueCapacity());
        this.completes = new StatementBatcher<>("complete", executors::tryStatement,
            calls -> autocommit("complete", c -> completeBatch(c, calls)), call -> call.response().bodyLength(), this::concurrentBatches, config.getMaxBatchSize(),
            MAX_COMPLETE_BATCH_BYTES, config.getQueueCapacity());
    }

    /**
     * One read of the table on the statement executor (O2): reachable, and the table present.
     * A missing table fails the probe with what to do.
     */
    @Override
    public CompletionStage<Map<String, Object>> probe() {
        return executors.statement("probe", () -> autocommit("probe", c -> {
            try (java.sql.Statement s = c.createStatement()) {
                s.setQueryTimeout((int) Math.max(1, statementTimeoutMillis / 1000));
                try (ResultSet rs = s.executeQuery("SELECT 1 FROM " + sql.table + " LIMIT 1")) {
                    rs.next();
                }
            } catch (SQLException e) {
                if ("42P01".equals(e.getSQLState())) {
                    throw new IdempotencyStoreException("PostgreSQL idempotency store: the table " + sql.table
                        + " does not exist; apply the migration db/idempotency (or set "
                        + PostgresStoreConfigurationProperties.PREFIX + ".migrate=true)", e);
                }
                throw e;
            }
            return Map.<String, Object>of("table", sql.table, "tablePresent", true);
        }));
    }

    /**
     * Counts with one pass over the table (a sequential scan: about a second per few million
     * rows), with the table's and its indexes' size, on a store thread and connection, bounded by
     * {@value #INSPECTION_TIMEOUT_SECONDS} s.
     */
    @Override
    public CompletionStage<RecordCounts> counts() {
        return inspect("count", c -> {
            try (PreparedStatement ps = c.prepareStatement("SELECT"
                + " count(*) FILTER (WHERE NOT completed AND expires_at > ?),"
                + " count(*) FILTER (WHERE NOT completed AND expires_at <= ?),"
                + " count(*) FILTER (WHERE completed AND expires_at > ?),"
                + " count(*) FILTER (WHERE completed AND expires_at <= ?),"
                + " pg_relation_size(CAST(? AS regclass)), pg_indexes_size(CAST(? AS regclass)),"
                + " pg_total_relation_size(CAST(? AS regclass))"
                + " FROM " + sql.table)) {
                ps.setQueryTimeout(INSPECTION_TIMEOUT_SECONDS);
                OffsetDateTime now = timestamp(now());
                for (int i = 1; i <= 4; i++) {
                    ps.setObject(i, now);
                }
                for (int i = 5; i <= 7; i++) {
                    ps.setString(i, sql.table);
                }
                try (ResultSet rs = ps.executeQuery()) {
                    rs.next();
                    Map<String, Object> size = new LinkedHashMap<>();
                    size.put("table", sql.table);
                    size.put("tableBytes", rs.getLong(5));
                    size.put("indexBytes", rs.getLong(6));
                    size.put("totalBytes", rs.getLong(7));
                    return new RecordCounts(rs.getLong(1), rs.getLong(2), rs.getLong(3), rs.getLong(4), true, size);
                }
            }
        });
    }

    /** A pass over the table (no index serves it: the hot path pays for no index of its own). */
    @Override
    public CompletionStage<List<RecordInfo>> inProgressStartedBefore(Instant startedBefore, int limit) {
        Objects.requireNonNull(startedBefore, "startedBefore");
        Checks.atLeast(limit, 1, "limit");
        return inspect("list in progress", c -> {
            try (PreparedStatement ps = c.prepareStatement("SELECT store_key, completed, fencing_token, acquired_at,"
                + " expires_at, response_status, octet_length(response_body), body_omitted FROM " + sql.table
                + " WHERE NOT completed AND acquired_at <= ? ORDER BY acquired_at LIMIT ?")) {
                ps.setQueryTimeout(INSPECTION_TIMEOUT_SECONDS);
                ps.setObject(1, timestamp(startedBefore));
                ps.setInt(2, limit);
                List<RecordInfo> found = new ArrayList<>();
                try (ResultSet rs = ps.executeQuery()) {
                    while (rs.next()) {
                        found.add(recordInfo(rs));
                    }
                }
                return found;
            }
        });
    }

    /** One primary-key lookup; the body's length is read, never the body. */
    @Override
    public CompletionStage<Optional<RecordInfo>> find(String storeKey) {
        Objects.requireNonNull(storeKey, "storeKey");
        return inspect("find", c -> {
            try (PreparedStatement ps = c.prepareStatement("SELECT store_key, completed, fencing_token, acquired_at,"
                + " expires_at, response_status, octet_length(response_body), body_omitted FROM " + sql.table
                + " WHERE store_key = ?")) {
                ps.setQueryTimeout(INSPECTION_TIMEOUT_SECONDS);
                ps.setBytes(1, StoreKeys.encode(storeKey));
                try (ResultSet rs = ps.executeQuery()) {
                    return rs.next() ? Optional.of(recordInfo(rs)) : Optional.<RecordInfo>empty();
                }
            }
        });
    }

    private static RecordInfo recordInfo(ResultSet rs) throws SQLException {
        boolean completed = rs.getBoolean(2);
        long body = rs.getLong(7);
        return new RecordInfo(StoreKeys.decode(rs.getBytes(1)), completed ? RecordInfo.State.COMPLETED : RecordInfo.State.IN_PROGRESS,
            rs.getLong(3), rs.getObject(4, OffsetDateTime.class).toInstant(), rs.getObject(5, OffsetDateTime.class).toInstant(),
            completed ? rs.getInt(6) : 0, completed && !rs.getBoolean(8) ? body : -1);
    }

    /**
     * An operator's read, on a store thread and an autocommitted connection, with its own longer
     * timeout (each statement's query timeout, and the connection's network timeout).
     */
    private <T> CompletionStage<T> inspect(String operation, SqlWork<T> work) {
        return executors.statement(operation, () -> autocommit(operation, c -> {
            c.setNetworkTimeout(SAME_THREAD, (INSPECTION_TIMEOUT_SECONDS + 1) * 1000);
            return work.run(c);
        }));
    }

    @Override
    public String describe() {
        return "PostgreSQL table " + sql.table + " on datasource '" + config.getDatasource() + "', "
            + (config.getThreads() > 0 ? config.getThreads() + " threads" : "a thread per pooled connection")
            + ", batches of up to " + config.getMaxBatchSize() + ", connection wait " + config.getConnectionTimeout()
            + ", statement timeout " + config.getStatementTimeout() + (config.isMigrate() ? ", schema migrated at startup" : "");
    }

    @EventListener
    void startup(StartupEvent event) {
        // settle the executors (and with them the datasource lookup) now, not on a request's thread
        executors.threads();
        if (config.isMigrate()) {
            try {
                migrator.ensure();
            } catch (RuntimeException e) {
                // not fatal: the store retries before its first call and answers 503 until it succeeds
                LOG.warn("idempotency PostgreSQL schema migration failed at startup, will retry on first use: {}",
                    e.toString());
                return;
            }
        }
        vacuumWarning().whenComplete((warning, failure) -> {
            if (warning != null && warning.isPresent()) {
                LOG.warn(warning.get());
            } else if (failure != null) {
                LOG.debug("idempotency PostgreSQL store: could not check autovacuum: {}", failure.toString());
            }
        });
    }

    /**
     * Whether autovacuum reclaims the space of the rows the purge deletes: when it is off for the
     * server or for the table, the table grows with every record ever written although the purge
     * keeps the live rows few (benchmarks/README.md, "Does the purge keep up").
     *
     * @return the warning to log, or empty when autovacuum is on for the table
     */
    CompletableFuture<Optional<String>> vacuumWarning() {
        return executors.statement("autovacuum check", () -> autocommit("autovacuum check", c -> {
            try (PreparedStatement ps = c.prepareStatement("SELECT current_setting('autovacuum'),"
                + " (SELECT option_value FROM pg_options_to_table((SELECT reloptions FROM pg_class"
                + " WHERE oid = CAST(? AS regclass))) WHERE option_name = 'autovacuum_enabled')")) {
                ps.setString(1, sql.table);
                try (ResultSet rs = ps.executeQuery()) {
                    rs.next();
                    String server = rs.getString(1);
                    String table = rs.getString(2);
                    boolean off = !"on".equals(server) || (table != null && !Boolean.parseBoolean(table));
                    return off ? Optional.of("idempotency PostgreSQL store: autovacuum is off for " + sql.table
                        + " (server autovacuum=" + server + ", table autovacuum_enabled=" + (table == null ? "default" : table)
                        + "): the purge deletes expired records, but their space is reused only after a VACUUM, so the"
                        + " table grows with every record written. Turn autovacuum on, or VACUUM " + sql.table
                        + " on a schedule") : Optional.<String>empty();
                }
            }
        }));
    }

    /** Stops the store's threads; calls still queued fail. */
    @PreDestroy
    void close() {
        executors.close();
    }

    private int concurrentBatches() {
        return Math.min(config.getConcurrentBatches(), executors.threads());
    }

    /** @return the connection pool (not transaction-aware), for the outbox */
    DataSource dataSource() {
        return dataSource.get();
    }

    /** @return a pooled connection, its wait bounded by {@code connection-timeout} (see {@link ConnectionSource}) */
    Connection connection() throws SQLException {
        return connections.get();
    }

    /** @return a connection outside the pool, for the outbox's LISTEN (see {@link ConnectionSource#dedicated}) */
    Connection dedicatedConnection(String url) throws SQLException {
        return connections.dedicated(url);
    }

    /** @return the datasource's transaction manager, for the outbox */
    TransactionOperations<Connection> transactions() {
        return transactions.get();
    }

    /** Applies the schema (the outbox's table included) when migrations are on; for the outbox. */
    void ensureMigrated() {
        ensureSchema();
    }

    /** @return the settings, for the outbox */
    PostgresStoreConfiguration configuration() {
        return config;
    }

    /** @return how many batches of acquires ran so far (for tests and metrics) */
    long acquireBatches() {
        return acquires.batches();
    }

    /** @return how many batches of completions ran so far (for tests and metrics) */
    long completeBatches() {
        return completes.batches();
    }

    /** @return how many threads each of the store's executors has */
    int threads() {
        return executors.threads();
    }

    /** @return the qualified table name */
    String table() {
        return sql.table;
    }

    @Override
    public CompletionStage<AcquireResult> acquire(String storeKey, byte[] fingerprint, Duration lease) {
        checkAcquire(storeKey, fingerprint, lease);
        return acquires.submit(new AcquireCall(storeKey, fingerprint.clone(), lease));
    }

    @Override
    public CompletionStage<Boolean> complete(String storeKey, long fencingToken, StoredResponse response,
                                             Duration retention) {
        Objects.requireNonNull(storeKey, "storeKey");
        Objects.requireNonNull(response, "response");
        Checks.positive(retention, "retention");
        return completes.submit(new CompleteCall(storeKey, fencingToken, response, retention));
    }

    @Override
    public CompletionStage<Boolean> release(String storeKey, long fencingToken) {
        Objects.requireNonNull(storeKey, "storeKey");
        return executors.statement("release", () -> autocommit("release", c -> {
            try (PreparedStatement ps = prepare(c, sql.release)) {
                ps.setBytes(1, StoreKeys.encode(storeKey));
                ps.setLong(2, fencingToken);
                return ps.executeUpdate() == 1;
            }
        }));
    }

    @Override
    public CompletionStage<Boolean> renew(String storeKey, long fencingToken, Duration lease) {
        Objects.requireNonNull(storeKey, "storeKey");
        Checks.positive(lease, "lease");
        return executors.statement("renew", () -> autocommit("renew", c -> {
            try (PreparedStatement ps = prepare(c, sql.renew)) {
                ps.setObject(1, timestamp(now().plus(lease)));
                ps.setBytes(2, StoreKeys.encode(storeKey));
                ps.setLong(3, fencingToken);
                return ps.executeUpdate() == 1;
            }
        }));
    }

    /** One indexed read of {@code <table>_steps}. */
    @Override
    public CompletionStage<Map<String, byte[]>> steps(String storeKey) {
        Objects.requireNonNull(storeKey, "storeKey");
        return executors.statement("steps", () -> autocommit("steps", c -> {
            try (PreparedStatement ps = prepare(c, sql.steps)) {
                ps.setBytes(1, StoreKeys.encode(storeKey));
                ps.setObject(2, timestamp(now()));
                Map<String, byte[]> found = new LinkedHashMap<>();
                try (ResultSet rs = ps.executeQuery()) {
                    while (rs.next()) {
                        found.put(rs.getString(1), rs.getBytes(2));
                    }
                }
                return found;
            }
        }));
    }

    /** One statement: the step's row, inserted only while the holder's token holds its in-progress record. */
    @Override
    public CompletionStage<Boolean> recordStep(String storeKey, long fencingToken, String step, byte[] result,
                                               Duration keep) {
        Objects.requireNonNull(storeKey, "storeKey");
        Objects.requireNonNull(step, "step");
        Objects.requireNonNull(result, "result");
        Checks.positive(keep, "keep");
        return executors.statement("recordStep", () -> autocommit("recordStep",
            c -> recordStep(c, storeKey, fencingToken, step, result, keep)));
    }

    private boolean recordStep(Connection c, String storeKey, long fencingToken, String step, byte[] result, Duration keep)
        throws SQLException {
        Instant now = now();
        try (PreparedStatement ps = prepare(c, sql.recordStep)) {
            ps.setString(1, step);
            ps.setBytes(2, result);
            ps.setObject(3, timestamp(now));
            ps.setObject(4, timestamp(now.plus(keep)));
            ps.setBytes(5, StoreKeys.encode(storeKey));
            ps.setLong(6, fencingToken);
            try (ResultSet rs = ps.executeQuery()) {
                return rs.next();
            }
        }
    }

    @Override
    public CompletionStage<Boolean> discardSteps(String storeKey, long fencingToken) {
        Objects.requireNonNull(storeKey, "storeKey");
        return executors.statement("discardSteps", () -> autocommit("discardSteps", c -> {
            byte[] key = StoreKeys.encode(storeKey);
            try (PreparedStatement ps = prepare(c, sql.discardSteps)) {
                ps.setBytes(1, key);
                ps.setLong(2, fencingToken);
                ps.setBytes(3, key);
                try (ResultSet rs = ps.executeQuery()) {
                    return rs.next() && rs.getLong(1) > 0;
                }
            }
        }));
    }

    @Override
    public <T> CompletionStage<T> inTransaction(Function<Transaction, T> work) {
        Objects.requireNonNull(work, "work");
        return executors.transaction(() -> transaction(work));
    }

    /** One transaction, on the island thread that runs it. */
    private <T> T transaction(Function<Transaction, T> work) {
        ensureSchema();
        try {
            return transactions.get().execute(TransactionDefinition.of(TransactionDefinition.Propagation.REQUIRES_NEW),
                status -> {
                    try {
                        return work.apply(new JdbcTransaction(status));
                    } catch (RuntimeException e) {
                        throw new WorkFailure(e);
                    }
                });
        } catch (WorkFailure e) {
            throw e.getCause();
        } catch (IdempotencyStoreException e) {
            throw e;
        } catch (RuntimeException e) {
            throw new IdempotencyStoreException("PostgreSQL idempotency store: transaction failed: " + describe(e), e);
        }
    }

    /**
     * Deletes expired records in batches: completed ones whose retention ended, in-progress ones
     * whose lease ended more than the stale-lease grace ago. At most {@code purge-max-batches}
     * statements of {@code purge-batch-size} rows, each its own short transaction.
     *
     * <p>Each batch's transaction sets its own {@code statement_timeout} (the store's), so a
     * batch that runs too long (a table bloated with dead rows, a saturated server) is ended by
     * PostgreSQL itself: the connection stays usable, where a client-side cancel can lose the race
     * with the socket's timeout and leave a broken connection behind. Such a batch ends the run
     * with an {@link IdempotencyStoreException} saying so, and the batches after it are half as
     * large (down to {@value #MIN_PURGE_BATCH} rows); each run without a timeout doubles them back
     * toward {@code purge-batch-size}. A batch cancelled before its timeout could have run out
     * (an operator's {@code pg_cancel_backend}) is a plain failure and changes no batch size. The
     * statement timeout does not stop a commit being written: a commit that outlasts it plus the
     * network grace ({@value #PURGE_NETWORK_GRACE_MILLIS} ms) costs its connection, fails the run
     * as a plain failure, and leaves that batch's outcome unknown; the next run deletes what is left.
     *
     * @return how many records were deleted
     * @throws IdempotencyStoreException when the database cannot be reached, or a batch ran past
     *     the statement timeout
     */
    int purgeExpired() {
        int total = 0;
        int batchSize = nextPurgeBatch;
        for (int batch = 0; batch < config.getPurgeMaxBatches(); batch++) {
            int deleted;
            long started = System.nanoTime();
            try {
                deleted = deleteExpiredBatch(batchSize);
            } catch (SQLException e) {
                // cancelled before its timeout could have run out: by someone else (pg_cancel_backend), not slowness
                boolean timedOut = QUERY_CANCELED.equals(e.getSQLState())
                    && System.nanoTime() - started >= TimeUnit.MILLISECONDS.toNanos(statementTimeoutMillis);
                if (!timedOut) {
                    throw new IdempotencyStoreException("PostgreSQL idempotency store: purge failed: " + describe(e), e);
                }
                int smaller = Math.max(Math.min(MIN_PURGE_BATCH, batchSize), batchSize / 2);
                nextPurgeBatch = smaller;
                throw new IdempotencyStoreException("PostgreSQL idempotency store: a purge batch of " + batchSize
                    + " records ran past the statement timeout (" + config.getStatementTimeout() + ") and was rolled"
                    + " back; " + total + " records were purged in this run, and the next batches take " + smaller
                    + ". Deletes this slow usually mean a table full of dead rows: check that autovacuum runs on "
                    + sql.table, e);
            }
            total += deleted;
            if (deleted < batchSize) {
                break;
            }
        }
        nextPurgeBatch = (int) Math.min(config.getPurgeBatchSize(), 2L * batchSize);
        return total;
    }

    /** @return the rows the purge's next batch deletes (for tests) */
    int purgeBatchSize() {
        return nextPurgeBatch;
    }

    /** One purge batch in a transaction of its own, under a statement_timeout PostgreSQL enforces. */
    private int deleteExpiredBatch(int batchSize) throws SQLException {
        ensureSchema();
        Instant now = now();
        Instant staleCutoff = now.minus(config.getPurgeStaleLeaseGrace());
        try (Connection c = connections.get()) {
            c.setNetworkTimeout(SAME_THREAD, (int) Math.min(Integer.MAX_VALUE,
                statementTimeoutMillis + PURGE_NETWORK_GRACE_MILLIS));
            c.setAutoCommit(false);
            try {
                try (PreparedStatement timeout = c.prepareStatement("SELECT set_config('statement_timeout', ?, true)")) {
                    timeout.setString(1, Long.toString(statementTimeoutMillis));
                    timeout.executeQuery().close();
                }
                int deleted;
                try (PreparedStatement ps = c.prepareStatement(sql.purge)) {
                    ps.setObject(1, timestamp(now));
                    ps.setObject(2, timestamp(staleCutoff));
                    ps.setInt(3, batchSize);
                    ps.setObject(4, timestamp(now));
                    ps.setObject(5, timestamp(staleCutoff));
                    deleted = ps.executeUpdate();
                }
                // up to as many steps whose keep ended (CONTRACT S23), in the same batch's transaction;
                // not counted: the purge reports records
                try (PreparedStatement ps = c.prepareStatement(sql.purgeSteps)) {
                    ps.setObject(1, timestamp(now));
                    ps.setInt(2, batchSize);
                    ps.setObject(3, timestamp(now));
                    ps.executeUpdate();
                }
                c.commit();
                c.setAutoCommit(true);
                return deleted;
            } catch (SQLException | RuntimeException e) {
                try {
                    c.rollback();
                    c.setAutoCommit(true); // a pool resets it too; a plain connection is closed anyway
                } catch (SQLException suppressed) {
                    e.addSuppressed(suppressed);
                }
                throw e;
            }
        }
    }

    /**
     * Acquire outside a transaction, in one statement for every outcome (see
     * {@link PostgresSql#acquireAutocommit}): a live record is only read, so replays, 409s and 422s
     * commit nothing. Only when that statement lost a race with a concurrent acquire (no acquired
     * row, and no live record in its snapshot) the locking upsert decides on the latest version.
     */
    private AcquireResult acquireAutocommit(Connection c, String storeKey, byte[] fingerprint, Duration lease)
        throws SQLException {
        return inProgressOnLockTimeout(() -> acquireStatements(c, storeKey, fingerprint, lease), lease);
    }

    /**
     * @return what {@code acquire} answers, or 409 for the whole lease when it met a record that
     *     another transaction (a transactional-mode request) holds uncommitted past
     *     {@code lock-timeout} (SQL state {@code 55P03})
     */
    private static AcquireResult inProgressOnLockTimeout(SqlSupplier<AcquireResult> acquire, Duration lease)
        throws SQLException {
        try {
            return acquire.get();
        } catch (SQLException e) {
            if (LOCK_NOT_AVAILABLE.equals(e.getSQLState())) {
                return new AcquireResult.InProgress(lease);
            }
            throw e;
        }
    }

    /** Binds the parameters the two acquire statements share: key, fingerprint, now, lease end, lock timeout. */
    private void bindAcquire(PreparedStatement ps, String storeKey, byte[] fingerprint, Instant now, Duration lease)
        throws SQLException {
        ps.setBytes(1, StoreKeys.encode(storeKey));
        ps.setBytes(2, fingerprint);
        ps.setObject(3, timestamp(now));
        ps.setObject(4, timestamp(now.plus(lease)));
        ps.setString(5, lockTimeoutMillis);
    }

    /**
     * The statements of {@link #acquireAutocommit}, which throw on a lock timeout (SQL state
     * {@code 55P03}) instead of answering it.
     */
    private AcquireResult acquireStatements(Connection c, String storeKey, byte[] fingerprint, Duration lease)
        throws SQLException {
        Instant now = now();
        try (PreparedStatement ps = prepare(c, sql.acquireAutocommit)) {
            bindAcquire(ps, storeKey, fingerprint, now, lease);
            try (ResultSet rs = ps.executeQuery()) {
                while (rs.next()) {
                    switch (rs.getString("kind")) {
                        case "I":
                            return new AcquireResult.Acquired(rs.getLong("fencing_token"), false);
                        case "T":
                            return new AcquireResult.Acquired(rs.getLong("fencing_token"), rs.getInt("holder") > 1);
                        default:
                            Instant expiresAt = rs.getObject("expires_at", OffsetDateTime.class).toInstant();
                            if (now.isBefore(expiresAt)) {
                                return existing(rs, fingerprint, now, expiresAt);
                            }
                    }
                }
            }
        }
        return lockingAcquire(c, storeKey, fingerprint, lease);
    }

    /** An acquire waiting for its batch. */
    private record AcquireCall(String storeKey, byte[] fingerprint, Duration lease) {
    }

    /** A completion waiting for its batch. */
    private record CompleteCall(String storeKey, long token, StoredResponse response, Duration retention) {
    }

    /**
     * Acquires a batch of calls in one transaction, one commit. One statement first reads the
     * records of all the batch's keys ({@link PostgresSql#find}): a live record answers its calls
     * at once (replay, 409, 422; a batch of those writes and commits nothing). A second statement
     * inserts the records of the keys that have none ({@link PostgresSql#insertNew}), all at once.
     * Every other call (an expired record to take over, a key inserted meanwhile by another
     * transaction, a second call for a key of the batch) then runs the statements of
     * {@link #acquireAutocommit}, in the calls' order, so calls for the same key see each other as
     * if they had come one after the other. Alone, a call runs the
     * one-statement acquire, autocommitted. When any statement of a batch fails (a record held
     * uncommitted by another transaction past {@code lock-timeout} aborts the transaction), the
     * batch rolls back and each call is decided on its own, so one held record never fails the
     * others.
     */
    private List<AcquireResult> acquireBatch(Connection c, List<AcquireCall> calls) throws SQLException {
        if (calls.size() > 1) {
            List<AcquireResult> results = inOneTransaction(c, () -> acquireTogether(c, calls));
            if (results != null) {
                return results;
            }
        }
        List<AcquireResult> each = new ArrayList<>(calls.size());
        for (AcquireCall call : calls) {
            each.add(acquireAutocommit(c, call.storeKey(), call.fingerprint(), call.lease()));
        }
        return each;
    }

    /** The statements of a batch of acquires, inside its transaction (see {@link #acquireBatch}). */
    private List<AcquireResult> acquireTogether(Connection c, List<AcquireCall> calls) throws SQLException {
        Instant now = now();
        byte[][] keys = new byte[calls.size()][];
        for (int i = 0; i < keys.length; i++) {
            keys[i] = StoreKeys.encode(calls.get(i).storeKey());
        }
        Map<String, Live> live = new HashMap<>(keys.length * 2);
        try (PreparedStatement ps = prepare(c, sql.find)) {
            ps.setArray(1, c.createArrayOf("bytea", keys));
            try (ResultSet rs = ps.executeQuery()) {
                while (rs.next()) {
                    Instant expiresAt = rs.getObject("expires_at", OffsetDateTime.class).toInstant();
                    if (now.isBefore(expiresAt)) {
                        live.putIfAbsent(StoreKeys.decode(rs.getBytes("store_key")), new Live(rs.getBytes("fingerprint"), expiresAt,
                            rs.getBoolean("completed") ? new AcquireResult.Replay(storedResponse(rs)) : null));
                    }
                }
            }
        }
        AcquireResult[] answers = new AcquireResult[keys.length];
        List<Integer> absent = new ArrayList<>(keys.length);
        Set<String> inserting = new HashSet<>(keys.length * 2);
        for (int i = 0; i < keys.length; i++) {
            AcquireCall call = calls.get(i);
            Live record = live.get(call.storeKey());
            if (record != null) {
                answers[i] = record.answer(call.fingerprint(), now);
            } else if (inserting.add(call.storeKey())) {
                absent.add(i); // a later call for the same key meets this one's record below
            }
        }
        if (!absent.isEmpty()) {
            Map<String, Long> inserted = insertNew(c, calls, keys, absent, now);
            for (int i : absent) {
                Long token = inserted.get(calls.get(i).storeKey());
                if (token != null) {
                    answers[i] = new AcquireResult.Acquired(token, false);
                }
            }
        }
        // the rest in the calls' order: takeovers of expired records, keys another transaction
        // inserted since the first step, and second calls for a key of this batch
        List<AcquireResult> results = new ArrayList<>(keys.length);
        for (int i = 0; i < keys.length; i++) {
            AcquireCall call = calls.get(i);
            results.add(answers[i] != null ? answers[i]
                : acquireStatements(c, call.storeKey(), call.fingerprint(), call.lease()));
        }
        return results;
    }

    /**
     * Inserts the in-progress records of the calls at {@code indexes}, whose keys had no live
     * record, in one statement ({@link PostgresSql#insertNew}).
     *
     * @return the fencing token of each store key inserted; a key that has a record by now is absent
     */
    private Map<String, Long> insertNew(Connection c, List<AcquireCall> calls, byte[][] keys, List<Integer> indexes,
                                        Instant now) throws SQLException {
        int n = indexes.size();
        byte[][] newKeys = new byte[n][];
        byte[][] fingerprints = new byte[n][];
        Long[] leases = new Long[n];
        for (int j = 0; j < n; j++) {
            int i = indexes.get(j);
            newKeys[j] = keys[i];
            fingerprints[j] = calls.get(i).fingerprint();
            leases[j] = TimeUnit.NANOSECONDS.toMicros(calls.get(i).lease().toNanos());
        }
        Map<String, Long> tokens = new HashMap<>(n * 2);
        try (PreparedStatement ps = prepare(c, sql.insertNew)) {
            ps.setString(1, lockTimeoutMillis);
            ps.setObject(2, timestamp(now));
            ps.setArray(3, c.createArrayOf("bytea", newKeys));
            ps.setArray(4, c.createArrayOf("bytea", fingerprints));
            ps.setArray(5, c.createArrayOf("bigint", leases));
            try (ResultSet rs = ps.executeQuery()) {
                while (rs.next()) {
                    tokens.put(StoreKeys.decode(rs.getBytes(1)), rs.getLong(2));
                }
            }
        }
        return tokens;
    }

    /** A live record a batch found: the answer for each of its calls. */
    private record Live(byte[] fingerprint, Instant expiresAt, AcquireResult.Replay replay) {
        AcquireResult answer(byte[] callFingerprint, Instant now) {
            if (!MessageDigest.isEqual(fingerprint, callFingerprint)) {
                return new AcquireResult.Mismatch();
            }
            return replay != null ? replay : new AcquireResult.InProgress(Duration.between(now, expiresAt));
        }
    }

    /**
     * Completes a batch of calls in one transaction, one commit: the completion statement once per
     * call, sent together as a JDBC batch (one round trip). When the batch fails, each call runs
     * on its own.
     */
    private List<Boolean> completeBatch(Connection c, List<CompleteCall> calls) throws SQLException {
        if (calls.size() > 1) {
            List<Boolean> results = inOneTransaction(c, () -> completeStatements(c, calls));
            if (results != null) {
                return results;
            }
        }
        List<Boolean> each = new ArrayList<>(calls.size());
        for (CompleteCall call : calls) {
            each.add(complete(c, call.storeKey(), call.token(), call.response(), call.retention()));
        }
        return each;
    }

    /** The completion statement once per call, as one JDBC batch; @return whether each was stored */
    private List<Boolean> completeStatements(Connection c, List<CompleteCall> calls) throws SQLException {
        try (PreparedStatement ps = prepare(c, sql.complete)) {
            for (CompleteCall call : calls) {
                bindComplete(c, ps, call.storeKey(), call.token(), call.response(), call.retention());
                ps.addBatch();
            }
            int[] counts = ps.executeBatch();
            List<Boolean> each = new ArrayList<>(calls.size());
            for (int count : counts) {
                each.add(count == 1);
            }
            return each;
        }
    }

    /**
     * Runs {@code work} in one transaction on {@code c} and commits it.
     *
     * @return the work's result, or {@code null} when a statement failed and the transaction was
     *     rolled back (the caller then runs each call on its own)
     * @throws SQLException when the commit itself fails: nothing of the batch is known to be stored
     */
    private <T> T inOneTransaction(Connection c, SqlSupplier<T> work) throws SQLException {
        c.setAutoCommit(false);
        try {
            T result;
            try {
                result = work.get();
            } catch (SQLException e) {
                c.rollback();
                return null;
            } catch (RuntimeException | Error e) {
                c.rollback(); // never let the switch back to autocommit commit half a batch
                throw e;
            }
            c.commit();
            return result;
        } finally {
            c.setAutoCommit(true);
        }
    }

    @FunctionalInterface
    private interface SqlSupplier<T> {
        T get() throws SQLException;
    }

    /** The locking upsert: decides on the latest committed version of the row, and takes it over when expired. */
    private AcquireResult acquire(Connection c, String storeKey, byte[] fingerprint, Duration lease)
        throws SQLException {
        return inProgressOnLockTimeout(() -> lockingAcquire(c, storeKey, fingerprint, lease), lease);
    }

    /** The statement of {@link #acquire}, which throws on a lock timeout instead of answering it. */
    private AcquireResult lockingAcquire(Connection c, String storeKey, byte[] fingerprint, Duration lease)
        throws SQLException {
        Instant now = now();
        try (PreparedStatement ps = prepare(c, sql.acquire)) {
            bindAcquire(ps, storeKey, fingerprint, now, lease);
            try (ResultSet rs = ps.executeQuery()) {
                if (!rs.next()) {
                    throw new SQLException("acquire returned no row");
                }
                if (rs.getBoolean("acquired")) {
                    return new AcquireResult.Acquired(rs.getLong("fencing_token"), rs.getInt("holder") > 1);
                }
                return existing(rs, fingerprint, now, rs.getObject("expires_at", OffsetDateTime.class).toInstant());
            }
        }
    }

    /** The answer for a live record someone else holds or held: mismatch, replay, or in progress. */
    private static AcquireResult existing(ResultSet rs, byte[] fingerprint, Instant now, Instant expiresAt)
        throws SQLException {
        if (!MessageDigest.isEqual(rs.getBytes("fingerprint"), fingerprint)) {
            return new AcquireResult.Mismatch();
        }
        if (rs.getBoolean("completed")) {
            return new AcquireResult.Replay(storedResponse(rs));
        }
        return new AcquireResult.InProgress(Duration.between(now, expiresAt));
    }

    private static StoredResponse storedResponse(ResultSet rs) throws SQLException {
        List<String> flat = headerArray(rs.getArray("response_headers"));
        return new StoredResponse(rs.getInt("response_status"), decodeHeaders(flat), rs.getBytes("response_body"),
            rs.getBoolean("body_omitted"), decodeReason(flat));
    }

    private boolean complete(Connection c, String storeKey, long fencingToken, StoredResponse response,
                             Duration retention) throws SQLException {
        try (PreparedStatement ps = prepare(c, sql.complete)) {
            bindComplete(c, ps, storeKey, fencingToken, response, retention);
            return ps.executeUpdate() == 1;
        }
    }

    private void bindComplete(Connection c, PreparedStatement ps, String storeKey, long fencingToken,
                              StoredResponse response, Duration retention) throws SQLException {
        ps.setObject(1, timestamp(now().plus(retention)));
        ps.setInt(2, response.status());
        ps.setArray(3, c.createArrayOf("text", encodeHeaders(response)));
        ps.setBytes(4, response.body());
        ps.setBoolean(5, response.bodyOmitted());
        ps.setBytes(6, StoreKeys.encode(storeKey));
        ps.setLong(7, fencingToken);
    }

    /** One store operation on its own pooled connection, autocommitted. */
    private <T> T autocommit(String operation, SqlWork<T> work) {
        ensureSchema();
        try (Connection c = connections.get()) {
            c.setNetworkTimeout(SAME_THREAD, (int) Math.min(Integer.MAX_VALUE, statementTimeoutMillis + 1000));
            if (!c.getAutoCommit()) {
                c.setAutoCommit(true);
            }
            return work.run(c);
        } catch (SQLException e) {
            throw new IdempotencyStoreException("PostgreSQL idempotency store: " + operation + " failed: "
                + describe(e), e);
        }
    }

    private void ensureSchema() {
        if (!config.isMigrate()) {
            return;
        }
        try {
            migrator.ensure();
        } catch (FlywayException e) {
            throw new IdempotencyStoreException("PostgreSQL idempotency store: schema migration failed: "
                + describe(e), e);
        }
    }

    private PreparedStatement prepare(Connection c, String text) throws SQLException {
        PreparedStatement ps = c.prepareStatement(text);
        try {
            if (ps.isWrapperFor(PgStatement.class)) {
                ps.unwrap(PgStatement.class).setQueryTimeoutMs(statementTimeoutMillis);
            } else {
                ps.setQueryTimeout((int) Math.max(1, (statementTimeoutMillis + 999) / 1000));
            }
        } catch (SQLException | RuntimeException e) {
            ps.close();
            throw e;
        }
        return ps;
    }

    private Instant now() {
        return clock.instant().truncatedTo(ChronoUnit.MICROS);
    }

    private static OffsetDateTime timestamp(Instant instant) {
        return OffsetDateTime.ofInstant(instant.truncatedTo(ChronoUnit.MICROS), ZoneOffset.UTC);
    }

    /**
     * The array's first entry when the route set a reason phrase of its own: {@code :reason, 1, phrase},
     * then the headers. No header name starts with a colon.
     */
    static final String REASON_ENTRY = ":reason";

    /**
     * Headers as {@code name, count, value...} per header, in order, after the reason phrase as
     * {@link #REASON_ENTRY} when the response has one of its own.
     */
    static String[] encodeHeaders(StoredResponse response) {
        List<String> flat = new ArrayList<>();
        if (response.reason() != null) {
            flat.add(REASON_ENTRY);
            flat.add("1");
            flat.add(response.reason());
        }
        response.headers().forEach((name, values) -> {
            flat.add(name);
            flat.add(Integer.toString(values.size()));
            flat.addAll(values);
        });
        return flat.toArray(new String[0]);
    }

    /** @throws SQLException for a malformed array, so a bad row is a store failure (503), not a 500 */
    static List<String> headerArray(Array array) throws SQLException {
        try {
            return List.of((String[]) array.getArray());
        } catch (RuntimeException e) {
            throw new SQLException("malformed response_headers in the idempotency record", e);
        }
    }

    /** @return the reason phrase {@link #encodeHeaders} put first, or {@code null} */
    static String decodeReason(List<String> flat) throws SQLException {
        if (flat.size() < 3 || !REASON_ENTRY.equals(flat.get(0))) {
            return null;
        }
        if (!"1".equals(flat.get(1)) || !StoredResponse.validReason(flat.get(2))) {
            throw new SQLException("malformed reason phrase in the idempotency record's response_headers");
        }
        return flat.get(2);
    }

    /** @throws SQLException also for a malformed array, so a bad row is a store failure (503), not a 500 */
    static Map<String, List<String>> decodeHeaders(List<String> flat) throws SQLException {
        try {
            Map<String, List<String>> headers = new LinkedHashMap<>();
            int i = !flat.isEmpty() && REASON_ENTRY.equals(flat.get(0)) ? 3 : 0;
            while (i < flat.size()) {
                int count = Integer.parseInt(flat.get(i + 1));
                headers.put(flat.get(i), flat.subList(i + 2, i + 2 + count));
                i += 2 + count;
            }
            return headers;
        } catch (RuntimeException e) {
            throw new SQLException("malformed response_headers in the idempotency record", e);
        }
    }

    private static String describe(Throwable e) {
        StringBuilder sb = new StringBuilder();
        for (Throwable t = e; t != null; t = t.getCause() == t ? null : t.getCause()) {
            if (sb.length() > 0) {
                sb.append(" <- ");
            }
            sb.append(t.getClass().getSimpleName());
            if (t instanceof SQLException sqle && sqle.getSQLState() != null) {
                sb.append('[').append(sqle.getSQLState()).append(']');
            }
            if (t.getMessage() != null) {
                sb.append(": ").append(t.getMessage());
            }
        }
        return sb.toString();
    }

    private static void checkAcquire(String storeKey, byte[] fingerprint, Duration lease) {
        Objects.requireNonNull(storeKey, "storeKey");
        Objects.requireNonNull(fingerprint, "fingerprint");
        Checks.positive(lease, "lease");
    }

    @FunctionalInterface
    private interface SqlWork<T> {
        T run(Connection connection) throws SQLException;
    }

    /** Carries an exception of the transactional work through the transaction manager, unchanged. */
    private static final class WorkFailure extends RuntimeException {
        WorkFailure(RuntimeException cause) {
            super(null, cause, false, false);
        }

        @Override
        public synchronized RuntimeException getCause() {
            return (RuntimeException) super.getCause();
        }
    }

    /** The filter's handle on one transaction: statements on the transaction's connection. */
    private final class JdbcTransaction implements Transaction {
        private final TransactionStatus<Connection> status;
        /** This transaction's id, read once when a step is recorded beside it. */
        private volatile String xid;

        JdbcTransaction(TransactionStatus<Connection> status) {
            this.status = status;
        }

        @Override
        public AcquireResult acquire(String storeKey, byte[] fingerprint, Duration lease) {
            checkAcquire(storeKey, fingerprint, lease);
            AcquireResult result = inTx("acquire", c -> PostgresIdempotencyStore.this.acquire(c, storeKey,
                fingerprint, lease));
            if (result instanceof AcquireResult.InProgress) {
                status.setRollbackOnly(); // after a lock timeout the transaction is aborted anyway
            }
            return result;
        }

        @Override
        public boolean complete(String storeKey, long fencingToken, StoredResponse response, Duration retention) {
            Objects.requireNonNull(response, "response");
            Checks.positive(retention, "retention");
            return inTx("complete", c -> PostgresIdempotencyStore.this.complete(c, storeKey, fencingToken, response,
                retention));
        }

        /**
         * On a connection of its own, fenced by this transaction's id: written only while
         * {@code pg_xact_status} says it still runs.
         */
        @Override
        public boolean recordStepOutside(String storeKey, String step, byte[] result, Duration keep) {
            Objects.requireNonNull(step, "step");
            Objects.requireNonNull(result, "result");
            Checks.positive(keep, "keep");
            String id = xid();
            return autocommit("recordStep", c -> {
                Instant now = now();
                try (PreparedStatement ps = prepare(c, sql.recordStepBeside)) {
                    ps.setBytes(1, StoreKeys.encode(storeKey));
                    ps.setString(2, step);
                    ps.setBytes(3, result);
                    ps.setObject(4, timestamp(now));
                    ps.setObject(5, timestamp(now.plus(keep)));
                    ps.setString(6, id);
                    try (ResultSet rs = ps.executeQuery()) {
                        return rs.next();
                    }
                }
            });
        }

        @Override
        public boolean discardStepsOutside(String storeKey) {
            String id = xid();
            return autocommit("discardSteps", c -> {
                try (PreparedStatement ps = prepare(c, sql.discardStepsBeside)) {
                    ps.setString(1, id);
                    ps.setBytes(2, StoreKeys.encode(storeKey));
                    try (ResultSet rs = ps.executeQuery()) {
                        return rs.next() && rs.getBoolean(1);
                    }
                }
            });
        }

        private String xid() {
            String id = xid;
            if (id == null) {
                id = inTx("recordStep", c -> {
                    try (PreparedStatement ps = prepare(c, "SELECT CAST(pg_current_xact_id() AS text)");
                         ResultSet rs = ps.executeQuery()) {
                        rs.next();
                        return rs.getString(1);
                    }
                });
                xid = id;
            }
            return id;
        }

        /** The step's row on the transaction's connection: it commits with the handler's writes (an atomic phase). */
        @Override
        public boolean recordStep(String storeKey, long fencingToken, String step, byte[] result, Duration keep) {
            Objects.requireNonNull(result, "result");
            Checks.positive(keep, "keep");
            return inTx("recordStep", c -> PostgresIdempotencyStore.this.recordStep(c, storeKey, fencingToken, step,
                result, keep));
        }

        @Override
        public void setRollbackOnly() {
            status.setRollbackOnly();
        }

        @Override
        public boolean isRollbackOnly() {
            return status.isRollbackOnly();
        }

        private <T> T inTx(String operation, SqlWork<T> work) {
            try {
                return work.run(status.getConnection());
            } catch (SQLException e) {
                status.setRollbackOnly();
                throw new IdempotencyStoreException("PostgreSQL idempotency store: " + operation
                    + " (transactional) failed: " + describe(e), e);
            }
        }
    }
}
