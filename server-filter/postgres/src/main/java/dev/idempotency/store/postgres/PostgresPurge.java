package dev.idempotency.store.postgres;

import dev.idempotency.server.store.IdempotencyStoreException;

import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.SQLException;
import java.time.Instant;
import java.util.concurrent.TimeUnit;

/**
 * Deletes expired records in batches, each its own short transaction under a statement timeout
 * PostgreSQL enforces; a batch that runs past it halves the batches after it (see
 * {@link #purgeExpired()}).
 */
final class PostgresPurge {

    private final PostgresIdempotencyStore store;

    PostgresPurge(PostgresIdempotencyStore store, int batchSize) {
        this.store = store;
        this.nextPurgeBatch = batchSize;
    }

    /**
     * The rows the purge's next batch deletes: {@code purge-batch-size}, halved after a batch
     * that ran past the statement timeout (down to {@link #MIN_PURGE_BATCH}, or the configured
     * size if smaller), doubled back after each run without one. Written by the purge only (one
     * run at a time per instance).
     */
    volatile int nextPurgeBatch;

    /** The smallest batch the purge shrinks to after timeouts. */
    static final int MIN_PURGE_BATCH = 10;

    /** SQL state of a statement PostgreSQL cancelled (here: its statement_timeout ran out). */
    static final String QUERY_CANCELED = "57014";

    /**
     * How long past its statement timeout the purge waits for PostgreSQL's answer before it gives
     * the connection up: the server ends the statement itself, so this is a last resort.
     */
    static final int PURGE_NETWORK_GRACE_MILLIS = 5000;

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
        for (int batch = 0; batch < store.config.getPurgeMaxBatches(); batch++) {
            int deleted;
            long started = System.nanoTime();
            try {
                deleted = deleteExpiredBatch(batchSize);
            } catch (SQLException e) {
                // cancelled before its timeout could have run out: by someone else (pg_cancel_backend), not slowness
                boolean timedOut = QUERY_CANCELED.equals(e.getSQLState())
                    && System.nanoTime() - started >= TimeUnit.MILLISECONDS.toNanos(store.statementTimeoutMillis);
                if (!timedOut) {
                    throw new IdempotencyStoreException("PostgreSQL idempotency store: purge failed: " + PostgresIdempotencyStore.describe(e), e);
                }
                int smaller = Math.max(Math.min(MIN_PURGE_BATCH, batchSize), batchSize / 2);
                nextPurgeBatch = smaller;
                throw new IdempotencyStoreException("PostgreSQL idempotency store: a purge batch of " + batchSize
                    + " records ran past the statement timeout (" + store.config.getStatementTimeout() + ") and was rolled"
                    + " back; " + total + " records were purged in this run, and the next batches take " + smaller
                    + ". Deletes this slow usually mean a table full of dead rows: check that autovacuum runs on "
                    + store.sql.table, e);
            }
            total += deleted;
            if (deleted < batchSize) {
                break;
            }
        }
        nextPurgeBatch = (int) Math.min(store.config.getPurgeBatchSize(), 2L * batchSize);
        return total;
    }

    /** @return the rows the purge's next batch deletes (for tests) */
    int purgeBatchSize() {
        return nextPurgeBatch;
    }

    /** One purge batch in a transaction of its own, under a statement_timeout PostgreSQL enforces. */
    int deleteExpiredBatch(int batchSize) throws SQLException {
        store.ensureSchema();
        Instant now = store.now();
        Instant staleCutoff = now.minus(store.config.getPurgeStaleLeaseGrace());
        try (Connection c = store.connections.get()) {
            c.setNetworkTimeout(PostgresIdempotencyStore.SAME_THREAD, (int) Math.min(Integer.MAX_VALUE,
                store.statementTimeoutMillis + PURGE_NETWORK_GRACE_MILLIS));
            c.setAutoCommit(false);
            try {
                try (PreparedStatement timeout = c.prepareStatement("SELECT set_config('statement_timeout', ?, true)")) {
                    timeout.setString(1, Long.toString(store.statementTimeoutMillis));
                    timeout.executeQuery().close();
                }
                int deleted;
                try (PreparedStatement ps = c.prepareStatement(store.sql.purge)) {
                    ps.setObject(1, PostgresIdempotencyStore.timestamp(now));
                    ps.setObject(2, PostgresIdempotencyStore.timestamp(staleCutoff));
                    ps.setInt(3, batchSize);
                    ps.setObject(4, PostgresIdempotencyStore.timestamp(now));
                    ps.setObject(5, PostgresIdempotencyStore.timestamp(staleCutoff));
                    deleted = ps.executeUpdate();
                }
                // up to as many steps whose keep ended (CONTRACT S23), in the same batch's transaction;
                // not counted: the purge reports records
                try (PreparedStatement ps = c.prepareStatement(store.sql.purgeSteps)) {
                    ps.setObject(1, PostgresIdempotencyStore.timestamp(now));
                    ps.setInt(2, batchSize);
                    ps.setObject(3, PostgresIdempotencyStore.timestamp(now));
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
}
