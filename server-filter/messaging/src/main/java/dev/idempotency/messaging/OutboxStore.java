package dev.idempotency.messaging;

import java.time.Duration;
import java.time.Instant;
import java.util.List;
import java.util.Set;

/**
 * Where the outbox keeps its messages until they are sent (the SPI behind {@link Outbox}).
 * The in-memory store is the default; the PostgreSQL store module replaces it with a table
 * written in the application's transaction (the transactional outbox).
 *
 * <p>Guarantees every implementation gives:
 * <ul>
 *   <li><b>Append joins the caller's transaction</b> where the store has transactions: the
 *       message exists exactly when the caller's writes commit. Without a transaction in
 *       progress it is stored at once.</li>
 *   <li><b>One message per id.</b> Appending a message id that is already in the outbox (a
 *       retried operation publishing again) keeps the first and reports {@code false}.</li>
 *   <li><b>Order.</b> {@link #due} returns, per ordering key, only the earliest message still
 *       waiting, so a key's messages are sent in order even across failures.</li>
 *   <li>Thread-safe. The methods block (a database call); the relay calls them from a thread of
 *       its own, never from an event loop.</li>
 * </ul>
 */
public interface OutboxStore {

    /**
     * Stores a message to send.
     *
     * @return {@code false} when a message with this id is in the outbox already (nothing added)
     * @throws OutboxException when it cannot be stored (the caller's transaction then fails too)
     */
    boolean append(OutboxRecord message);

    /**
     * @param max at most this many
     * @param now the relay's clock
     * @return messages ready to send, in publish order, at most one per ordering key: for each
     *     key its earliest message, when it was never sent or is due for a retry. A key's next
     *     message goes only once the one before was confirmed (or parked), so a refusal can never
     *     let a later message of the key overtake it.
     */
    List<OutboxRecord> due(int max, Instant now);

    /** Removes messages the broker confirmed. */
    void sent(List<Long> ids);

    /**
     * Records a failed send: the message is retried at {@code retryAt}.
     *
     * @param reason why, for the operator
     */
    void failed(long id, String reason, Instant retryAt);

    /**
     * Puts a message aside that failed too often: it is no longer sent and no longer holds back
     * its ordering key; it stays, with {@code reason}, for an operator.
     */
    void park(long id, String reason);

    /** @return how many messages wait to be sent (parked ones not counted) */
    long depth();

    /** @return how long the oldest waiting message has waited, or zero */
    Duration lag(Instant now);

    /**
     * Whether this instance should relay now: where several instances share the outbox, exactly
     * one of them relays at a time, holding a lease it renews by calling this again before
     * {@code lease} runs out (a hand-over can send a message twice; consumers de-duplicate).
     * Superseded by {@link #claim}, whose default implementation rests on it.
     *
     * @param owner this instance's name
     * @param lease how long the lease lasts without renewal
     */
    boolean relayLease(String owner, Duration lease, Instant now);

    /**
     * The relay's share of the outbox (CONTRACT M9). A message's ordering key hashes into one of
     * {@code partitions} partitions ({@link OutboxPartitions#of}); each partition is held by one
     * instance at a time, under a lease its holder renews by calling this again before
     * {@code lease} runs out. Each call also rebalances: the instance takes free or expired
     * partitions up to its fair share of the live instances, and gives back those above it, so
     * partitions follow instances that join, leave ({@link #leave}) or crash (their leases run out).
     *
     * <p>The default, for a store one instance has to itself (or that implements only the single
     * relay lease): every partition while {@link #relayLease} is held, else none.
     *
     * @param owner      this instance's name, unique among the instances
     * @param partitions how many partitions there are
     * @return the partitions this instance holds now
     * @throws IllegalStateException when the instances sharing the outbox use another partition
     *                               count (a setting that differs between them)
     */
    default Set<Integer> claim(String owner, int partitions, Duration lease, Instant now) {
        return relayLease(owner, lease, now) ? OutboxPartitions.all(partitions) : Set.of();
    }

    /**
     * Extends the lease on what {@code owner} holds now (its partitions, and its place among the
     * live instances) without rebalancing: nothing is taken or given back. The relay calls it
     * while it waits for the broker to confirm a batch, so that a slow confirmation does not let
     * another instance take over the batch's partitions and send it again; a partition another
     * instance took over already stays with that one.
     *
     * <p>The default renews the single relay lease ({@link #relayLease}).
     *
     * @param owner this instance's name
     * @param lease how long the lease lasts from {@code now} without another renewal
     */
    default void renew(String owner, Duration lease, Instant now) {
        relayLease(owner, lease, now);
    }

    /**
     * Like {@link #due(int, Instant)}, among the messages of {@code partitions} only. Per ordering key it
     * still returns only the key's earliest waiting message, wherever that one lies, so a key whose
     * messages span partitions (written under another partition count) keeps its order.
     */
    default List<OutboxRecord> due(int max, Instant now, Set<Integer> partitions) {
        return due(max, now);
    }

    /** Gives back {@code owner}'s partitions at once (a graceful stop), instead of letting their leases run out. */
    default void leave(String owner) {
    }

    /**
     * Calls {@code wake} soon after a message is appended on any instance (e.g. PostgreSQL's
     * LISTEN/NOTIFY, CONTRACT M10), so relays need not wait for their next poll. Best effort: a
     * lost wake-up costs at most one poll interval.
     *
     * @return stops the wake-ups; the default has none to stop
     */
    default AutoCloseable onAppend(Runnable wake) {
        return () -> { };
    }
}
