package dev.idempotency.store.postgres;

import dev.idempotency.server.Checks;
import dev.idempotency.server.store.AcquireResult;
import dev.idempotency.server.store.IdempotencyStoreException;
import dev.idempotency.server.store.StoredResponse;
import dev.idempotency.server.store.TransactionalIdempotencyStore.Transaction;
import io.micronaut.transaction.TransactionDefinition;
import io.micronaut.transaction.TransactionStatus;

import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.time.Duration;
import java.time.Instant;
import java.util.Objects;
import java.util.function.Function;

/**
 * The transactional mode (CONTRACT S18): one transaction per request, in which the acquire, the
 * handler's own statements, its steps and the completion commit or roll back together.
 */
final class PostgresTransactions {

    private final PostgresIdempotencyStore store;

    PostgresTransactions(PostgresIdempotencyStore store) {
        this.store = store;
    }

    /** One transaction, on the island thread that runs it. */
    <T> T run(Function<Transaction, T> work) {
        store.ensureSchema();
        try {
            return store.transactions().execute(TransactionDefinition.of(TransactionDefinition.Propagation.REQUIRES_NEW),
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
            throw new IdempotencyStoreException("PostgreSQL idempotency store: transaction failed: " + PostgresIdempotencyStore.describe(e), e);
        }
    }

    /** Carries an exception of the transactional work through the transaction manager, unchanged. */
    static final class WorkFailure extends RuntimeException {
        WorkFailure(RuntimeException cause) {
            super(null, cause, false, false);
        }

        @Override
        public synchronized RuntimeException getCause() {
            return (RuntimeException) super.getCause();
        }
    }

    /** The filter's handle on one transaction: statements on the transaction's connection. */
    final class JdbcTransaction implements Transaction {
        private final TransactionStatus<Connection> status;
        /** This transaction's id, read once when a step is recorded beside it. */
        private volatile String xid;

        JdbcTransaction(TransactionStatus<Connection> status) {
            this.status = status;
        }

        @Override
        public AcquireResult acquire(String storeKey, byte[] fingerprint, Duration lease) {
            PostgresIdempotencyStore.checkAcquire(storeKey, fingerprint, lease, null);
            // no trace context: the in-progress record is never committed, so nobody meets it
            AcquireResult result = inTx("acquire", c -> store.acquire(c,
                new PostgresBatches.AcquireCall(storeKey, fingerprint, lease, null)));
            if (result instanceof AcquireResult.InProgress) {
                status.setRollbackOnly(); // after a lock timeout the transaction is aborted anyway
            }
            return result;
        }

        @Override
        public boolean complete(String storeKey, long fencingToken, StoredResponse response, Duration retention) {
            Objects.requireNonNull(response, "response");
            Checks.positive(retention, "retention");
            return inTx("complete", c -> store.complete(c, storeKey, fencingToken, response,
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
            return store.autocommit("recordStep", c -> {
                Instant now = store.now();
                try (PreparedStatement ps = store.prepare(c, store.sql.recordStepBeside)) {
                    ps.setBytes(1, StoreKeys.encode(storeKey));
                    ps.setString(2, step);
                    ps.setBytes(3, result);
                    ps.setObject(4, PostgresIdempotencyStore.timestamp(now));
                    ps.setObject(5, PostgresIdempotencyStore.timestamp(now.plus(keep)));
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
            return store.autocommit("discardSteps", c -> {
                try (PreparedStatement ps = store.prepare(c, store.sql.discardStepsBeside)) {
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
                    try (PreparedStatement ps = store.prepare(c, "SELECT CAST(pg_current_xact_id() AS text)");
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
            return inTx("recordStep", c -> store.recordStep(c, storeKey, fencingToken, step,
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

        private <T> T inTx(String operation, PostgresIdempotencyStore.SqlWork<T> work) {
            try {
                return work.run(status.getConnection());
            } catch (SQLException e) {
                status.setRollbackOnly();
                throw new IdempotencyStoreException("PostgreSQL idempotency store: " + operation
                    + " (transactional) failed: " + PostgresIdempotencyStore.describe(e), e);
            }
        }
    }
}
