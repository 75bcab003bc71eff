package dev.idempotency.server.store.memory;

/**
 * Records and bytes in one {@code long}: the records in the upper 24 bits, the bytes in the
 * lower 40. Neither total ever goes below zero (a record is counted inside the map's
 * {@code compute} that puts it in, before anything can take it out) nor past its field (the
 * bounds are capped at {@link InMemoryIdempotencyStore#MAX_ENTRIES_LIMIT} and {@link InMemoryIdempotencyStore#MAX_BYTES_LIMIT}, at most half of what
 * a field holds, and callers overshoot a bound by one record each at most), so adding a
 * combined delta never carries from one field into the other.
 */
final class Occupancy {
    static final int BYTES_BITS = 40;
    private static final long BYTES_MASK = (1L << BYTES_BITS) - 1;

    private Occupancy() {
    }

    static long of(long records, long bytes) {
        return (records << BYTES_BITS) + bytes;
    }

    static long records(long occupancy) {
        return occupancy >>> BYTES_BITS;
    }

    static long bytes(long occupancy) {
        return occupancy & BYTES_MASK;
    }
}
