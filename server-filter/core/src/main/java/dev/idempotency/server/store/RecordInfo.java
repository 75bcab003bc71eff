package dev.idempotency.server.store;

import java.time.Instant;
import java.util.Objects;

/**
 * One record as an operator sees it (CONTRACT O3): its state and timing, never its body or
 * fingerprint.
 *
 * @param storeKey     the key the store files the record under
 * @param state        in progress, completed, or released (a tombstone some stores keep briefly)
 * @param fencingToken the token of the record's current holder; {@link IdempotencyStore#release}
 *                     with it releases an in-progress record, and does nothing once the record
 *                     was taken over or completed
 * @param startedAt    when the current holder acquired the record (the Redis store derives it
 *                     from the fencing token, which encodes the acquiring instance's clock)
 * @param deadline     in progress: when the lease ends unless renewed; completed: when the
 *                     retention ends; released: when the tombstone goes
 * @param status       the stored response's status, 0 unless completed
 * @param bodyBytes    the stored body's length in bytes; -1 while not completed, and when the body
 *                     was too large to keep (CONTRACT S15)
 */
public record RecordInfo(String storeKey, State state, long fencingToken, Instant startedAt, Instant deadline,
                         int status, long bodyBytes) {

    /** A record's state. */
    public enum State {
        /** Acquired and not yet completed or released: its request is running, or its holder died. */
        IN_PROGRESS,
        /** Completed: replayed to every retry until its retention ends. */
        COMPLETED,
        /** Released by its holder (the request failed in a way that may be retried). */
        RELEASED
    }

    public RecordInfo {
        Objects.requireNonNull(storeKey, "storeKey");
        Objects.requireNonNull(state, "state");
        Objects.requireNonNull(startedAt, "startedAt");
        Objects.requireNonNull(deadline, "deadline");
    }

    /**
     * @param now the time to compare with
     * @return whether the record's lease or retention has ended at {@code now}: an expired
     *     in-progress record is taken over by the next request with its key, an expired completed
     *     record counts as absent and is deleted by the store's purge or expiry
     */
    public boolean expired(Instant now) {
        return !deadline.isAfter(now);
    }
}
