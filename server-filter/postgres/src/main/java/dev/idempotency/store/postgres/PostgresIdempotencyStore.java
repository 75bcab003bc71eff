package dev.idempotency.store.postgres;

import dev.idempotency.server.Checks;
import dev.idempotency.server.store.AcquireResult;
import dev.idempotency.server.store.IdempotencyStore;
import dev.idempotency.server.store.IdempotencyStoreException;
import dev.idempotency.server.store.RecordCounts;
import dev.idempotency.server.store.RecordInfo;
import dev.idempotency.server.store.StoreInspection;
import dev.idempotency.server.store.StoredResponse;
import dev.idempotency.server.store.TransactionalIdempotencyStore;
import dev.idempotency.server.store.memory.InMemoryIdempotencyStore;
import io.micronaut.context.BeanLocator;
import io.micronaut.context.annotation.Replaces;
import io.micronaut.context.annotation.Requires;
import io.micronaut.context.event.StartupEvent;
import io.micronaut.core.type.Argument;
import io.micronaut.core.util.SupplierUtil;
import io.micronaut.data.connection.jdbc.advice.DelegatingDataSource;
import io.micronaut.inject.qualifiers.Qualifiers;
import io.micronaut.runtime.event.annotation.EventListener;
import io.micronaut.transaction.TransactionOperations;
import jakarta.annotation.PreDestroy;
import jakarta.inject.Inject;
import jakarta.inject.Singleton;
import org.flywaydb.core.api.FlywayException;
import org.postgresql.jdbc.PgStatement;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

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
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Optional;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.Executor;
import java.util.function.Function;
import java.util.function.Supplier;
import javax.sql.DataSource;

/**
 * The PostgreSQL idempotency store (CONTRACT S10-S17, S18, S19): records in one table shared by
 * every application instance, reached through a Micronaut datasource (HikariCP) and, in
 * transactional mode, through that datasource's Micronaut Data transaction manager. Select it with
 * {@code idempotency.store.type=postgres} (or, with no type set,
 * {@code idempotency.store.postgres.enabled=true}); it then replaces the in-memory store.
 *
 * <p>Guarantees: every operation is atomic on its record (one statement, or one transaction of
 * the store's); no caller thread ever waits for a connection or a statement (stages complete on
 * the store's own threads); any database failure, and any statement past {@code statement-timeout},
 * fails the stage with an {@link IdempotencyStoreException}, and a record another transaction holds
 * uncommitted past {@code lock-timeout} is answered as in progress. In transactional mode
 * ({@link #inTransaction}) the acquire, the handler's own statements and the completion commit or
 * roll back together. Nothing touches the database in the constructor. The table, the statements,
 * the threads and the failure handling are described in this package's javadoc.
 */
@Singleton
@Replaces(InMemoryIdempotencyStore.class)
@Requires(condition = PostgresStoreSelected.class)
public final class PostgresIdempotencyStore implements TransactionalIdempotencyStore, StoreInspection {

    private static final Logger LOG = LoggerFactory.getLogger(PostgresIdempotencyStore.class);
    private static final String LOCK_NOT_AVAILABLE = "55P03";
    static final Executor SAME_THREAD = Runnable::run;

    final PostgresStoreConfiguration config;
    private final Clock clock;
    private final Supplier<DataSource> dataSource;
    private final Supplier<TransactionOperations<Connection>> transactions;
    final PostgresSql sql;
    private final PostgresSchemaMigrator migrator;
    final long statementTimeoutMillis;
    final String lockTimeoutMillis;
    final JdbcExecutors executors;
    final ConnectionSource connections;
    private final StatementBatcher<PostgresBatches.AcquireCall, AcquireResult> acquires;
    private final StatementBatcher<PostgresBatches.CompleteCall, Boolean> completes;
    private final PostgresBatches batches = new PostgresBatches(this);
    private final PostgresInspection inspection = new PostgresInspection(this);
    private final PostgresPurge purge;
    private final PostgresTransactions transactional = new PostgresTransactions(this);
    private final PostgresSteps steps = new PostgresSteps(this);
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
        this.purge = new PostgresPurge(this, config.getPurgeBatchSize());
        this.executors = new JdbcExecutors(config, this.dataSource);
        this.connections = new ConnectionSource(this.dataSource, config.getConnectionTimeout());
        this.acquires = new StatementBatcher<>("acquire", executors::tryStatement,
            calls -> autocommit("acquire", c -> batches.acquireBatch(c, calls)), call -> 1,
            this::concurrentBatches, config.getMaxBatchSize(), Long.MAX_VALUE, config.getQueueCapacity());
        this.completes = new StatementBatcher<>("complete", executors::tryStatement,
            calls -> autocommit("complete", c -> batches.completeBatch(c, calls)), call -> call.response().bodyLength(), this::concurrentBatches, config.getMaxBatchSize(),
            MAX_COMPLETE_BATCH_BYTES, config.getQueueCapacity());
    }

    /** One read of the table (O2); see {@link PostgresInspection#probe()}. */
    @Override
    public CompletionStage<Map<String, Object>> probe() {
        return inspection.probe();
    }

    @Override
    public CompletionStage<RecordCounts> counts() {
        return inspection.counts();
    }

    @Override
    public CompletionStage<List<RecordInfo>> inProgressStartedBefore(Instant startedBefore, int limit) {
        return inspection.inProgressStartedBefore(startedBefore, limit);
    }

    @Override
    public CompletionStage<Optional<RecordInfo>> find(String storeKey) {
        return inspection.find(storeKey);
    }

    /** @return the autovacuum warning to log, if any (see {@link PostgresInspection#vacuumWarning()}) */
    CompletableFuture<Optional<String>> vacuumWarning() {
        return inspection.vacuumWarning();
    }

    /** Deletes expired records (see {@link PostgresPurge#purgeExpired()}); @return how many */
    int purgeExpired() {
        return purge.purgeExpired();
    }

    /** @return the rows the purge's next batch deletes (for tests) */
    int purgeBatchSize() {
        return purge.purgeBatchSize();
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
        inspection.logVacuumWarning();
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

    @Override
    public CompletionStage<AcquireResult> acquire(String storeKey, byte[] fingerprint, Duration lease) {
        return acquire(storeKey, fingerprint, lease, null);
    }

    @Override
    public CompletionStage<AcquireResult> acquire(String storeKey, byte[] fingerprint, Duration lease, String traceparent) {
        checkAcquire(storeKey, fingerprint, lease, traceparent);
        return acquires.submit(new PostgresBatches.AcquireCall(storeKey, fingerprint.clone(), lease, traceparent));
    }

    @Override
    public CompletionStage<Boolean> complete(String storeKey, long fencingToken, StoredResponse response,
                                             Duration retention) {
        Objects.requireNonNull(storeKey, "storeKey");
        Objects.requireNonNull(response, "response");
        Checks.positive(retention, "retention");
        return completes.submit(new PostgresBatches.CompleteCall(storeKey, fencingToken, response, retention));
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

    @Override
    public CompletionStage<Map<String, byte[]>> steps(String storeKey) {
        return steps.steps(storeKey);
    }

    @Override
    public CompletionStage<Boolean> recordStep(String storeKey, long fencingToken, String step, byte[] result,
                                              Duration keep) {
        return steps.recordStep(storeKey, fencingToken, step, result, keep);
    }

    /** A step's row on {@code c}, fenced by the record's token (see {@link PostgresSteps}). */
    boolean recordStep(Connection c, String storeKey, long fencingToken, String step, byte[] result, Duration keep)
        throws SQLException {
        return steps.recordStep(c, storeKey, fencingToken, step, result, keep);
    }

    @Override
    public CompletionStage<Boolean> discardSteps(String storeKey, long fencingToken) {
        return steps.discardSteps(storeKey, fencingToken);
    }

    @Override
    public <T> CompletionStage<T> inTransaction(Function<Transaction, T> work) {
        Objects.requireNonNull(work, "work");
        return executors.transaction(() -> transactional.run(work));
    }

    /**
     * Acquire outside a transaction, in one statement for every outcome (see
     * {@link PostgresSql#acquireAutocommit}): a live record is only read, so replays, 409s and 422s
     * commit nothing. Only when that statement lost a race with a concurrent acquire (no acquired
     * row, and no live record in its snapshot) the locking upsert decides on the latest version.
     */
    AcquireResult acquireAutocommit(Connection c, PostgresBatches.AcquireCall call) throws SQLException {
        return inProgressOnLockTimeout(() -> acquireStatements(c, call), call.lease());
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

    /** Binds the parameters the two acquire statements share: key, fingerprint, now, lease end, lock timeout, trace. */
    private void bindAcquire(PreparedStatement ps, PostgresBatches.AcquireCall call, Instant now) throws SQLException {
        ps.setBytes(1, StoreKeys.encode(call.storeKey()));
        ps.setBytes(2, call.fingerprint());
        ps.setObject(3, timestamp(now));
        ps.setObject(4, timestamp(now.plus(call.lease())));
        ps.setString(5, lockTimeoutMillis);
        ps.setString(6, call.traceparent());
    }

    /**
     * The statements of {@link #acquireAutocommit}, which throw on a lock timeout (SQL state
     * {@code 55P03}) instead of answering it.
     */
    AcquireResult acquireStatements(Connection c, PostgresBatches.AcquireCall call) throws SQLException {
        Instant now = now();
        try (PreparedStatement ps = prepare(c, sql.acquireAutocommit)) {
            bindAcquire(ps, call, now);
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
                                return PostgresRecords.existing(rs, call.fingerprint(), now, expiresAt);
                            }
                    }
                }
            }
        }
        return lockingAcquire(c, call);
    }

    /**
     * Runs {@code work} in one transaction on {@code c} and commits it.
     *
     * @return the work's result, or {@code null} when a statement failed and the transaction was
     *     rolled back (the caller then runs each call on its own)
     * @throws SQLException when the commit itself fails: nothing of the batch is known to be stored
     */
    <T> T inOneTransaction(Connection c, SqlSupplier<T> work) throws SQLException {
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
    interface SqlSupplier<T> {
        T get() throws SQLException;
    }

    /** The locking upsert: decides on the latest committed version of the row, and takes it over when expired. */
    AcquireResult acquire(Connection c, PostgresBatches.AcquireCall call) throws SQLException {
        return inProgressOnLockTimeout(() -> lockingAcquire(c, call), call.lease());
    }

    /** The statement of {@link #acquire}, which throws on a lock timeout instead of answering it. */
    private AcquireResult lockingAcquire(Connection c, PostgresBatches.AcquireCall call) throws SQLException {
        Instant now = now();
        try (PreparedStatement ps = prepare(c, sql.acquire)) {
            bindAcquire(ps, call, now);
            try (ResultSet rs = ps.executeQuery()) {
                if (!rs.next()) {
                    throw new SQLException("acquire returned no row");
                }
                if (rs.getBoolean("acquired")) {
                    return new AcquireResult.Acquired(rs.getLong("fencing_token"), rs.getInt("holder") > 1);
                }
                return PostgresRecords.existing(rs, call.fingerprint(), now, rs.getObject("expires_at", OffsetDateTime.class).toInstant());
            }
        }
    }

    boolean complete(Connection c, String storeKey, long fencingToken, StoredResponse response,
                             Duration retention) throws SQLException {
        try (PreparedStatement ps = prepare(c, sql.complete)) {
            bindComplete(c, ps, storeKey, fencingToken, response, retention);
            return ps.executeUpdate() == 1;
        }
    }

    void bindComplete(Connection c, PreparedStatement ps, String storeKey, long fencingToken,
                              StoredResponse response, Duration retention) throws SQLException {
        ps.setObject(1, timestamp(now().plus(retention)));
        ps.setInt(2, response.status());
        ps.setArray(3, c.createArrayOf("text", PostgresRecords.encodeHeaders(response)));
        ps.setBytes(4, response.body());
        ps.setBoolean(5, response.bodyOmitted());
        ps.setBytes(6, StoreKeys.encode(storeKey));
        ps.setLong(7, fencingToken);
    }

    /** One store operation on its own pooled connection, autocommitted. */
    <T> T autocommit(String operation, SqlWork<T> work) {
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

    void ensureSchema() {
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

    PreparedStatement prepare(Connection c, String text) throws SQLException {
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

    Instant now() {
        return clock.instant().truncatedTo(ChronoUnit.MICROS);
    }

    static OffsetDateTime timestamp(Instant instant) {
        return OffsetDateTime.ofInstant(instant.truncatedTo(ChronoUnit.MICROS), ZoneOffset.UTC);
    }

    static String describe(Throwable e) {
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

    static void checkAcquire(String storeKey, byte[] fingerprint, Duration lease, String traceparent) {
        IdempotencyStore.checkTraceparent(traceparent);
        Objects.requireNonNull(storeKey, "storeKey");
        Objects.requireNonNull(fingerprint, "fingerprint");
        Checks.positive(lease, "lease");
    }

    @FunctionalInterface
    interface SqlWork<T> {
        T run(Connection connection) throws SQLException;
    }
}
