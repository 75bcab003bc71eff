package dev.idempotency.server.store;


import java.time.Duration;
import java.util.concurrent.CompletionStage;
import java.util.function.Function;

/**
 * An {@link IdempotencyStore} that can keep the idempotency record in the same database
 * transaction as the handler's own writes (CONTRACT S18). With transactional mode on
 * ({@code idempotency.transactional=true} or {@code @Idempotent(transactional = true)}) the
 * filter runs acquire, the handler and the completion inside one {@link #inTransaction} call.
 *
 * <h2>The transactional island</h2>
 * Database transactions of JDBC are bound to a thread, so this is the one place where the
 * filter's work blocks a thread: {@link #inTransaction} returns at once, runs {@code work} on a
 * bounded executor of the store (its "transactional island", sized to the connections it may
 * hold), and completes its stage from there. Inside {@code work} the {@link Transaction}'s
 * methods block, and the filter waits there for the handler. No event-loop or request thread
 * ever waits for a transaction; when the island is saturated the stage fails with
 * {@link IdempotencyStoreException} (503) rather than queueing without bound.
 *
 * <h2>Guarantee</h2>
 * Everything done inside {@code work} through the {@link Transaction} handle, and every write
 * the handler makes on the same database through the application's transaction manager
 * (Micronaut Data repositories, {@code @Transactional} methods with the default propagation
 * {@code REQUIRED}, JDBC through the application's {@code DataSource} bean), commits or rolls
 * back as one unit:
 * <ul>
 *   <li>{@code work} returns and nobody asked for a rollback: one commit. When the commit fails
 *       the stage fails with {@link IdempotencyStoreException}: neither the record nor the
 *       handler's writes exist, so the request may simply be retried.</li>
 *   <li>{@code work} throws, or called {@link Transaction#setRollbackOnly()}, or joined code
 *       marked the transaction rollback-only: rollback. The in-progress record vanishes with the
 *       handler's writes; this is the transactional form of {@link #release}.</li>
 * </ul>
 * The record is invisible to other transactions until the commit, so a lease cannot be renewed
 * from another connection and is not needed: a crashed instance's transaction is rolled back by
 * the database. A concurrent {@link Transaction#acquire} of the same key waits for the
 * uncommitted record, for at most a store-defined bound, and then reports
 * {@link AcquireResult.InProgress}.
 */
public interface TransactionalIdempotencyStore extends IdempotencyStore {

    /**
     * Runs {@code work} in a new database transaction (suspending none: the filter calls it
     * before any application transaction exists) on the store's transactional island, and
     * commits or rolls back as described above. {@code work} runs in Micronaut's propagated
     * context of the caller (tracing, MDC, the request) with the transaction added to it.
     *
     * @param work what to do inside the transaction, on an island thread; it may block. Its
     *             exceptions fail the stage unchanged after the rollback
     * @param <T>  the result type
     * @return what {@code work} returned, once committed (or rolled back on request); failed
     *     with {@link IdempotencyStoreException} when the transaction cannot be started or
     *     committed, or the island is saturated
     */
    <T> CompletionStage<T> inTransaction(Function<Transaction, T> work);

    /**
     * The running transaction; valid only inside {@link #inTransaction}, and on its thread except
     * for the step methods ({@link #recordStep}, {@link #recordStepOutside},
     * {@link #discardStepsOutside}), which the handler calls from its own thread (or the filter's
     * bounded step executor) while the island thread waits for it. Its
     * methods block.
     */
    interface Transaction {

        /**
         * {@link IdempotencyStore#acquire} inside this transaction. A record that another
         * uncommitted transaction holds is waited for up to the store's lock timeout; when that
         * runs out the answer is {@link AcquireResult.InProgress} with the full {@code lease}
         * as the remaining time and this transaction is marked rollback-only.
         *
         * @param storeKey    the fixed-length key of the record
         * @param fingerprint the request fingerprint
         * @param lease       the lease written into the record (it matters only if the record
         *                    is committed in progress, which the filter never does)
         * @return what was found
         * @throws IdempotencyStoreException when the store cannot answer
         */
        AcquireResult acquire(String storeKey, byte[] fingerprint, Duration lease);

        /**
         * {@link IdempotencyStore#complete} inside this transaction; takes effect at commit.
         *
         * @param storeKey     the record's key
         * @param fencingToken the token from {@link #acquire}
         * @param response     the response to store
         * @param retention    how long to keep it
         * @return {@code true} when stored
         * @throws IdempotencyStoreException when the store cannot answer
         */
        boolean complete(String storeKey, long fencingToken, StoredResponse response, Duration retention);

        /**
         * {@link IdempotencyStore#recordStep} inside this transaction, for a transactional step
         * (CONTRACT S23, an atomic phase): the step's record commits or rolls back with the
         * handler's writes of the same transaction. Fenced by the token of the record that the
         * holder committed in progress (a leased execution's), read and locked in this
         * transaction. The default throws: a store that cannot do it says so.
         *
         * @return {@code true} when recorded (at commit), {@code false} when fenced
         * @throws IdempotencyStoreException when the store cannot answer
         */
        default boolean recordStep(String storeKey, long fencingToken, String step, byte[] result, Duration keep) {
            throw new UnsupportedOperationException("this store cannot record a step inside a transaction");
        }

        /**
         * Records a durable step's result (CONTRACT S23) in a transaction of its own, on another
         * connection, so that it survives this transaction's rollback: a route in transactional
         * mode resumes its steps after a failed attempt. Fenced by this transaction: the step is
         * written only while this transaction still runs (a transaction the database rolled back,
         * with its connection lost, writes nothing); a step already recorded keeps its first result.
         * The default throws: a store that cannot do it says so.
         *
         * @return {@code true} when recorded (now or before), {@code false} when this transaction
         *     no longer runs
         * @throws IdempotencyStoreException when the store cannot answer
         */
        default boolean recordStepOutside(String storeKey, String step, byte[] result, Duration keep) {
            throw new UnsupportedOperationException("this store cannot record a step beside a transaction");
        }

        /**
         * Discards every step of {@code storeKey} in a transaction of its own, while this one still
         * runs: the operation was abandoned, and its next attempt runs every step again.
         *
         * @return {@code true} when discarded (or there were none), {@code false} when this
         *     transaction no longer runs
         * @throws IdempotencyStoreException when the store cannot answer
         */
        default boolean discardStepsOutside(String storeKey) {
            throw new UnsupportedOperationException("this store cannot discard steps beside a transaction");
        }

        /** Makes the transaction roll back instead of committing when {@code work} returns. */
        void setRollbackOnly();

        /** @return whether the transaction will roll back (asked here, or by joined application code) */
        boolean isRollbackOnly();
    }
}
