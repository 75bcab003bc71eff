package dev.idempotency.server.store;

import java.time.Instant;
import java.util.List;
import java.util.Optional;
import java.util.concurrent.CompletionStage;

/**
 * What an operator may ask of a store, besides serving requests (CONTRACT O3): how many records
 * it holds in each state and how large it is, which in-progress records have been running for
 * long, and one record's state and timing. The management endpoint {@code /idempotency} answers
 * with it; an {@link IdempotencyStore} offers it by implementing this interface too (the in-memory,
 * Redis and PostgreSQL stores do).
 *
 * <h2>Guarantees</h2>
 * <ul>
 *   <li><b>Never a body, never a fingerprint.</b> {@link RecordInfo} holds state, fencing token,
 *       times, status and body length: nothing a client sent or received.</li>
 *   <li><b>Read only.</b> Nothing here writes; releasing a stuck record is
 *       {@link IdempotencyStore#release} with the token {@link #find} reported, so a record that
 *       was taken over or completed in between is left alone.</li>
 *   <li><b>Asynchronous.</b> Like the store's own operations, no call blocks the calling thread,
 *       and a failure completes the stage with {@link IdempotencyStoreException}.</li>
 *   <li><b>Operator cost, not request cost.</b> {@link #counts} and {@link #inProgressStartedBefore}
 *       may visit every record (a scan of the table or the keyspace); each store's javadoc says what
 *       they cost. They are meant for an operator's occasional question, not for polling.</li>
 * </ul>
 */
public interface StoreInspection {

    /**
     * Counts the records by state and reports the store's size.
     *
     * @return the counts; failed with {@link IdempotencyStoreException} when the store cannot answer
     */
    CompletionStage<RecordCounts> counts();

    /**
     * In-progress records whose holder acquired them before {@code startedBefore}, oldest first:
     * the candidates for a stuck operation. Records whose lease has ended are included (their
     * {@link RecordInfo#deadline()} is in the past): the next request with their key takes them
     * over, but nobody has yet.
     *
     * @param startedBefore the latest acquisition time to list
     * @param limit         the most records to list, at least 1
     * @return the records found; failed with {@link IdempotencyStoreException} when the store
     *     cannot answer
     */
    CompletionStage<List<RecordInfo>> inProgressStartedBefore(Instant startedBefore, int limit);

    /**
     * One record's state and timing.
     *
     * @param storeKey the key the store files the record under (the filter's hash of scope and key)
     * @return the record, or empty when there is none; failed with
     *     {@link IdempotencyStoreException} when the store cannot answer
     */
    CompletionStage<Optional<RecordInfo>> find(String storeKey);
}
