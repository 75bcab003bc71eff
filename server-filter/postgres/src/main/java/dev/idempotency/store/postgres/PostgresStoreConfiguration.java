package dev.idempotency.store.postgres;

import io.micronaut.core.annotation.Nullable;

import java.time.Duration;

/**
 * The PostgreSQL store's settings, bound from {@code idempotency.store.postgres.*}. Immutable
 * once the application has started. See {@link PostgresStoreConfigurationProperties} for each
 * setting's meaning and default.
 */
public interface PostgresStoreConfiguration {

    /** @return whether the PostgreSQL store replaces the in-memory store */
    boolean isEnabled();

    /** @return the name of the Micronaut datasource ({@code datasources.<name>.*}) holding the records */
    String getDatasource();

    /** @return the schema of the table, or {@code null} for the connection's current schema */
    @Nullable
    String getSchema();

    /** @return the unqualified table name */
    String getTableName();

    /** @return whether the store applies its Flyway migration itself */
    boolean isMigrate();

    /** @return the longest any one store statement may run */
    Duration getStatementTimeout();

    /** @return how long an acquire waits for a record another transaction holds uncommitted */
    Duration getLockTimeout();

    /** @return the longest an operation waits for a free pooled connection */
    Duration getConnectionTimeout();

    /** @return whether the scheduled purge of expired records runs on this instance */
    boolean isPurgeEnabled();

    /** @return the pause between two purge runs */
    Duration getPurgeInterval();

    /** @return the most records one purge statement deletes */
    int getPurgeBatchSize();

    /** @return the most purge statements of one run */
    int getPurgeMaxBatches();

    /** @return how long after its lease ended an abandoned in-progress record is kept before purging */
    Duration getPurgeStaleLeaseGrace();

    /** @return threads for the store's JDBC work, per executor; 0 means the connection pool's size */
    int getThreads();

    /** @return how many store calls may wait for a thread before new ones are refused */
    int getQueueCapacity();

    /** @return how many acquires (or completions) one statement and one commit may carry at most */
    default int getMaxBatchSize() {
        return PostgresStoreConfigurationProperties.DEFAULT_MAX_BATCH_SIZE;
    }

    /** @return how many batches of acquires (and of completions) run at once at most */
    default int getConcurrentBatches() {
        return PostgresStoreConfigurationProperties.DEFAULT_CONCURRENT_BATCHES;
    }
}
