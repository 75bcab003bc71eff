package dev.idempotency.store.postgres;

import dev.idempotency.server.Checks;
import io.micronaut.context.annotation.ConfigurationProperties;
import io.micronaut.core.annotation.Nullable;

import java.time.Duration;
import java.util.regex.Pattern;

/**
 * {@code idempotency.store.postgres.*}: the PostgreSQL store's settings. Every setter checks its
 * value and fails the application's startup with a message naming the setting and the bad
 * value.
 */
@ConfigurationProperties(PostgresStoreConfigurationProperties.PREFIX)
public class PostgresStoreConfigurationProperties implements PostgresStoreConfiguration {

    /** The prefix of every setting. */
    public static final String PREFIX = "idempotency.store.postgres";
    public static final boolean DEFAULT_ENABLED = false;
    public static final String DEFAULT_DATASOURCE = "default";
    public static final String DEFAULT_TABLE_NAME = "idempotency_records";
    public static final boolean DEFAULT_MIGRATE = true;
    public static final Duration DEFAULT_STATEMENT_TIMEOUT = Duration.ofSeconds(2);
    public static final Duration DEFAULT_LOCK_TIMEOUT = Duration.ofSeconds(1);
    public static final Duration DEFAULT_CONNECTION_TIMEOUT = Duration.ofSeconds(1);
    public static final boolean DEFAULT_PURGE_ENABLED = true;
    public static final Duration DEFAULT_PURGE_INTERVAL = Duration.ofSeconds(10);
    public static final int DEFAULT_PURGE_BATCH_SIZE = 1000;
    public static final int DEFAULT_PURGE_MAX_BATCHES = 100;
    public static final Duration DEFAULT_PURGE_STALE_LEASE_GRACE = Duration.ofHours(1);
    public static final int DEFAULT_THREADS = 0;
    public static final int DEFAULT_QUEUE_CAPACITY = 1000;
    public static final int DEFAULT_MAX_BATCH_SIZE = 64;
    public static final int DEFAULT_CONCURRENT_BATCHES = 2;

    /**
     * Lower-case SQL identifiers, unquoted. Up to 40 characters so that derived names
     * ({@code <table>_schema_history}, {@code <table>_fencing_seq}, ...) stay within
     * PostgreSQL's 63.
     */
    private static final Pattern IDENTIFIER = Pattern.compile("[a-z_][a-z0-9_]{0,39}");

    private boolean enabled = DEFAULT_ENABLED;
    private String datasource = DEFAULT_DATASOURCE;
    @Nullable
    private String schema;
    private String tableName = DEFAULT_TABLE_NAME;
    private boolean migrate = DEFAULT_MIGRATE;
    private Duration statementTimeout = DEFAULT_STATEMENT_TIMEOUT;
    private Duration lockTimeout = DEFAULT_LOCK_TIMEOUT;
    private Duration connectionTimeout = DEFAULT_CONNECTION_TIMEOUT;
    private boolean purgeEnabled = DEFAULT_PURGE_ENABLED;
    private Duration purgeInterval = DEFAULT_PURGE_INTERVAL;
    private int purgeBatchSize = DEFAULT_PURGE_BATCH_SIZE;
    private int purgeMaxBatches = DEFAULT_PURGE_MAX_BATCHES;
    private Duration purgeStaleLeaseGrace = DEFAULT_PURGE_STALE_LEASE_GRACE;
    private int threads = DEFAULT_THREADS;
    private int queueCapacity = DEFAULT_QUEUE_CAPACITY;
    private int maxBatchSize = DEFAULT_MAX_BATCH_SIZE;
    private int concurrentBatches = DEFAULT_CONCURRENT_BATCHES;

    @Override
    public boolean isEnabled() {
        return enabled;
    }

    /**
     * Use PostgreSQL for idempotency records instead of the in-memory store, when
     * {@code idempotency.store.type} is not set (which, when set, decides alone:
     * {@code idempotency.store.type=postgres}). Default {@value #DEFAULT_ENABLED}: adding the
     * module alone changes nothing.
     *
     * @param enabled {@code true} to use this store
     */
    public void setEnabled(boolean enabled) {
        this.enabled = enabled;
    }

    @Override
    public String getDatasource() {
        return datasource;
    }

    /**
     * The Micronaut datasource ({@code datasources.<name>.*}, HikariCP) that holds the records.
     * In transactional mode it must be the datasource the handlers write to, since the record
     * joins their transaction. Default {@value #DEFAULT_DATASOURCE}.
     *
     * @param datasource a datasource name
     */
    public void setDatasource(String datasource) {
        if (datasource == null || datasource.isBlank()) {
            throw new IllegalArgumentException(PREFIX + ".datasource must name a datasource, was " + datasource);
        }
        this.datasource = datasource;
    }

    @Override
    @Nullable
    public String getSchema() {
        return schema;
    }

    /**
     * The schema of the records table, created by the migration when missing. Default none: the
     * connection's current schema (usually {@code public}).
     *
     * @param schema a lower-case SQL identifier ({@code [a-z_][a-z0-9_]*}, at most 40 characters)
     */
    public void setSchema(@Nullable String schema) {
        this.schema = schema == null || schema.isBlank() ? null : requireIdentifier(schema, "schema");
    }

    @Override
    public String getTableName() {
        return tableName;
    }

    /**
     * The records table. Its sequence, indexes and Flyway history table are named after it.
     * Default {@value #DEFAULT_TABLE_NAME}.
     *
     * @param tableName a lower-case SQL identifier ({@code [a-z_][a-z0-9_]*}, at most 40 characters)
     */
    public void setTableName(String tableName) {
        this.tableName = requireIdentifier(tableName, "table-name");
    }

    @Override
    public boolean isMigrate() {
        return migrate;
    }

    /**
     * Apply the shipped Flyway migration ({@code classpath:db/idempotency}) at startup and before
     * the first store call, with the history table {@code <table-name>_schema_history}, apart from
     * the application's own migrations. Set {@code false} when the schema is managed elsewhere
     * (then run the migration's SQL with the placeholders replaced). Default
     * {@value #DEFAULT_MIGRATE}.
     *
     * @param migrate whether the store migrates its table
     */
    public void setMigrate(boolean migrate) {
        this.migrate = migrate;
    }

    @Override
    public Duration getStatementTimeout() {
        return statementTimeout;
    }

    /**
     * The longest any one store statement may run: the JDBC query timeout (the server cancels the
     * statement) and, outside transactional mode, the connection's network timeout plus a second
     * (for a server that stopped answering). A timeout is answered 503. The wait for a pooled
     * connection has its own bound, {@link #setConnectionTimeout connection-timeout}. Default 2s.
     *
     * @param statementTimeout a positive duration
     */
    public void setStatementTimeout(Duration statementTimeout) {
        this.statementTimeout = Checks.positive(statementTimeout, PREFIX + ".statement-timeout");
    }

    @Override
    public Duration getConnectionTimeout() {
        return connectionTimeout;
    }

    /**
     * The longest a store operation waits for a free connection of the datasource's pool; then it
     * fails and the request is answered 503 (and, after a few such failures, the store circuit
     * answers at once). The store's own bound, so an outage is answered in about this time however
     * long the application lets its own work wait (HikariCP's {@code connection-timeout} defaults
     * to 30 s). Exact for HikariCP pools; another pool's own timeout applies instead. Transactional
     * mode takes its connection through the transaction manager, where the pool's timeout applies:
     * keep that short too. Default 1s.
     *
     * @param connectionTimeout a positive duration
     */
    public void setConnectionTimeout(Duration connectionTimeout) {
        this.connectionTimeout = Checks.positive(connectionTimeout, PREFIX + ".connection-timeout");
    }

    @Override
    public Duration getLockTimeout() {
        return lockTimeout;
    }

    /**
     * How long an acquire waits for a record that another transaction holds uncommitted (a
     * transactional-mode request still running); then it answers 409 in progress. Applied as a
     * transaction-local {@code lock_timeout} inside the acquire statement and restored right after
     * it. Must be shorter than {@link #setStatementTimeout statement-timeout}. Default 1s.
     *
     * @param lockTimeout a positive duration
     */
    public void setLockTimeout(Duration lockTimeout) {
        this.lockTimeout = Checks.positive(lockTimeout, PREFIX + ".lock-timeout");
    }

    @Override
    public boolean isPurgeEnabled() {
        return purgeEnabled;
    }

    /**
     * Run the scheduled purge of expired records on this instance. Safe on every instance at once
     * (batches skip rows another purge holds). Default {@value #DEFAULT_PURGE_ENABLED}.
     *
     * @param purgeEnabled whether this instance purges
     */
    public void setPurgeEnabled(boolean purgeEnabled) {
        this.purgeEnabled = purgeEnabled;
    }

    @Override
    public Duration getPurgeInterval() {
        return purgeInterval;
    }

    /**
     * The pause between two purge runs. With the other purge defaults a run deletes up to
     * 100,000 rows, so the purge keeps up with 10,000 expiring records a second (benchmarks/README,
     * "Does the purge keep up"); an idle run is one cheap indexed statement. Default 10s.
     *
     * @param purgeInterval a positive duration
     */
    public void setPurgeInterval(Duration purgeInterval) {
        this.purgeInterval = Checks.positive(purgeInterval, PREFIX + ".purge-interval");
    }

    @Override
    public int getPurgeBatchSize() {
        return purgeBatchSize;
    }

    /**
     * The most records one purge statement (one short transaction) deletes. Default
     * {@value #DEFAULT_PURGE_BATCH_SIZE}. After a batch that ran past {@code statement-timeout}
     * the purge takes half as many (down to 10, or this size if smaller), and doubles back after
     * each run without one.
     *
     * @param purgeBatchSize at least 1
     */
    public void setPurgeBatchSize(int purgeBatchSize) {
        this.purgeBatchSize = Checks.atLeast(purgeBatchSize, 1, PREFIX + ".purge-batch-size");
    }

    @Override
    public int getPurgeMaxBatches() {
        return purgeMaxBatches;
    }

    /**
     * The most batches one purge run deletes, so a large backlog is worked off over several runs
     * instead of in one long burst; a run stops earlier once it has caught up (a batch smaller
     * than {@code purge-batch-size}). Default {@value #DEFAULT_PURGE_MAX_BATCHES}.
     *
     * @param purgeMaxBatches at least 1
     */
    public void setPurgeMaxBatches(int purgeMaxBatches) {
        this.purgeMaxBatches = Checks.atLeast(purgeMaxBatches, 1, PREFIX + ".purge-max-batches");
    }

    @Override
    public Duration getPurgeStaleLeaseGrace() {
        return purgeStaleLeaseGrace;
    }

    /**
     * How long an in-progress record is kept after its lease ended before the purge deletes it.
     * Until then its holder may still complete it late (nobody else ran the request), and a retry
     * takes it over anyway; completed records are purged as soon as their retention ends. Default
     * 1h.
     *
     * @param purgeStaleLeaseGrace zero or positive
     */
    public void setPurgeStaleLeaseGrace(Duration purgeStaleLeaseGrace) {
        this.purgeStaleLeaseGrace = Checks.notNegative(purgeStaleLeaseGrace, PREFIX + ".purge-stale-lease-grace");
    }

    @Override
    public int getThreads() {
        return threads;
    }

    /**
     * How many threads run the store's JDBC work, so that no request thread ever waits for a
     * connection or a statement: that many for the autocommitted store calls, and as many again
     * for transactional mode, where each transaction keeps its thread while the handler runs.
     * {@code 0} takes the datasource's HikariCP {@code maximum-pool-size}, so a thread rarely waits
     * for a connection either. Default {@value #DEFAULT_THREADS}: the pool's size.
     *
     * @param threads 0 for the pool's size, or a positive number
     */
    public void setThreads(int threads) {
        this.threads = Checks.atLeast(threads, 0, PREFIX + ".threads");
    }

    @Override
    public int getQueueCapacity() {
        return queueCapacity;
    }

    /**
     * How many store calls (and, separately, transactions) may wait for a thread. Past that a
     * call fails at once and its request is answered 503 {@code idempotency-store-unavailable}, so
     * a database that cannot keep up sheds load instead of queueing requests without bound.
     * Default {@value #DEFAULT_QUEUE_CAPACITY}.
     *
     * @param queueCapacity at least 1
     */
    public void setQueueCapacity(int queueCapacity) {
        this.queueCapacity = Checks.atLeast(queueCapacity, 1, PREFIX + ".queue-capacity");
    }

    @Override
    public int getMaxBatchSize() {
        return maxBatchSize;
    }

    /**
     * How many acquires, or completions, the store sends to the database together at most, as
     * one statement in one transaction (group commit). Calls that arrive while the store's
     * statements are busy wait together for the next free thread, so under load many requests
     * share one commit, the part of a small write that costs the most; a call that finds a
     * thread free goes out at once, alone. Completions also stop at 1 MiB of bodies per
     * statement. {@code 1} sends every call on its own. Default {@value #DEFAULT_MAX_BATCH_SIZE}.
     *
     * @param maxBatchSize at least 1
     */
    public void setMaxBatchSize(int maxBatchSize) {
        this.maxBatchSize = Checks.atLeast(maxBatchSize, 1, PREFIX + ".max-batch-size");
    }

    @Override
    public int getConcurrentBatches() {
        return concurrentBatches;
    }

    /**
     * How many batches of acquires, and separately of completions, run at once. Fewer batches in
     * flight means more calls per batch and fewer commits: two keep the database busy while the
     * next batch gathers, which suits a database whose commits are the bottleneck; raise it for a
     * database with many cores and fast storage. At most the store's {@code threads}. Default
     * {@value #DEFAULT_CONCURRENT_BATCHES}.
     *
     * @param concurrentBatches at least 1
     */
    public void setConcurrentBatches(int concurrentBatches) {
        this.concurrentBatches = Checks.atLeast(concurrentBatches, 1, PREFIX + ".concurrent-batches");
    }

    private static String requireIdentifier(String value, String setting) {
        if (value == null || !IDENTIFIER.matcher(value).matches()) {
            throw new IllegalArgumentException(PREFIX + "." + setting + " must be a lower-case SQL identifier"
                + " ([a-z_][a-z0-9_]*, at most 40 characters), was " + value);
        }
        return value;
    }

}
