package dev.idempotency.server.store;

import java.util.Map;
import java.util.Objects;

/**
 * How many records a store holds, by state, and how large it is (CONTRACT O3).
 *
 * @param inProgress        in-progress records whose lease runs
 * @param inProgressExpired in-progress records whose lease has ended (their holder died or hangs
 *                          without renewing; the next request with the key takes them over)
 * @param completed         completed records within their retention, replayed to retries
 * @param expired           completed records past their retention and released tombstones, which
 *                          count as absent and wait for the purge (PostgreSQL) or the key's expiry
 *                          (Redis)
 * @param complete          whether every record was counted ({@code true}), or the count stopped
 *                          at the store's scan bound and the figures are a lower bound
 * @param size              what the backing storage says of its size, by name (e.g. PostgreSQL's
 *                          {@code tableBytes}, Redis's {@code usedMemoryBytes}); store-specific
 */
public record RecordCounts(long inProgress, long inProgressExpired, long completed, long expired, boolean complete,
                           Map<String, Object> size) {

    public RecordCounts {
        size = Map.copyOf(Objects.requireNonNull(size, "size"));
    }

    /** @return all records counted, whatever their state */
    public long total() {
        return inProgress + inProgressExpired + completed + expired;
    }
}
