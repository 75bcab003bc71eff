package dev.idempotency.server.store.memory;

import dev.idempotency.server.Checks;
import dev.idempotency.server.store.AcquireResult;
import dev.idempotency.server.store.IdempotencyStore;
import dev.idempotency.server.store.IdempotencyStoreException;
import dev.idempotency.server.store.RecordCounts;
import dev.idempotency.server.store.RecordInfo;
import dev.idempotency.server.store.StoreInspection;
import dev.idempotency.server.store.StoredResponse;
import dev.idempotency.server.store.StoredResponseCodec;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import java.time.Clock;
import java.time.Duration;
import java.time.Instant;
import java.util.Comparator;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Optional;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.LongAdder;

/**
 * The default store: records in a {@link ConcurrentHashMap} of this JVM. Correct for a single
 * application instance only; use the PostgreSQL or Redis store when several instances serve
 * the same API.
 *
 * <h2>Bounds</h2>
 * Two bounds, whichever is reached first: about {@code maxEntries} records and about
 * {@code maxBytes} bytes of heap, counting each record's key, fingerprint, stored response
 * (status, headers, body) and a fixed per-record overhead for the objects that hold them
 * (concurrent callers may overshoot either bound by one record each). When a new record, or a
 * completion's response, takes the store past a bound, the earliest-completed records are
 * evicted, in constant time each and without a lock (logged at WARN at most once a minute of the
 * store's clock, since a retry of an evicted key runs again); when no completed record is left,
 * expired in-progress records are purged (at most once a second). Then:
 * <ul>
 *   <li>an acquire that still finds no room fails with {@link IdempotencyStoreException}
 *       (answered as 503): a running request's lock is never dropped and a handler never runs
 *       unprotected;</li>
 *   <li>a completion whose response still does not fit is stored without its body (replayed
 *       with status and headers as an omitted body, CONTRACT S15): the operation stays
 *       protected, and memory stays bounded.</li>
 * </ul>
 *
 * <p>Every operation is atomic per key ({@link ConcurrentHashMap#compute}) and runs on the
 * calling thread without waiting for anything but that map's own short per-bin locks; the stages
 * it returns are already complete.
 */
public final class InMemoryIdempotencyStore implements IdempotencyStore, StoreInspection {

    /** The default maximum number of records. */
    public static final int DEFAULT_MAX_ENTRIES = 100_000;
    /** The default maximum heap the records may take, 64 MiB. */
    public static final long DEFAULT_MAX_BYTES = 64L << 20;
    /**
     * The largest {@code maxEntries} a store accepts, 4,194,304 records (about a gigabyte of
     * heap): past that, use a shared store.
     */
    public static final int MAX_ENTRIES_LIMIT = 1 << 22;
    /** The largest {@code maxBytes} a store accepts, 512 GiB. */
    public static final long MAX_BYTES_LIMIT = 1L << 39;
    /**
     * What a record costs beyond its key and its array's content: the record (56 bytes), its map
     * node (32), its queue node (24) and its array's header (16), on a compressed-oops JVM.
     */
    static final int RECORD_OVERHEAD = 128;
    /** What a key of 64 hexadecimal digits costs: its four {@code long}s and their object's header. */
    static final int HEX_KEY_WEIGHT = 48;
    /** What a {@code String} key costs beyond its characters: the string and its array's header. */
    private static final int STRING_KEY_OVERHEAD = 40;

    private static final Logger LOG = LoggerFactory.getLogger(InMemoryIdempotencyStore.class);

    private static final long PURGE_AT_MOST_EVERY_MILLIS = 1000;

    private final ConcurrentHashMap<Object, MemoryEntry> entries;
    /** The durable steps of each record (CONTRACT S23), apart from it: they outlive its release. */
    private final ConcurrentHashMap<Object, MemorySteps> steps = new ConcurrentHashMap<>();
    private final AtomicLong tokens = new AtomicLong();
    private final OncePerMinute evictionWarnings = new OncePerMinute();
    private final OncePerMinute omittedWarnings = new OncePerMinute();
    private final AtomicLong lastFullPurge = new AtomicLong(Long.MIN_VALUE);
    /** Completed records in the order they completed: eviction takes the head, O(1) each. */
    private final ConcurrentLinkedQueue<MemoryEntry> completionOrder = new ConcurrentLinkedQueue<>();
    /**
     * How full the store is, in one word (see {@link Occupancy}): the records held and the heap
     * they take. One counter for both, and not a {@link LongAdder}: every change returns the new
     * totals, so the bound check that follows a change reads nothing more, where an adder's sum,
     * or the map's own {@link ConcurrentHashMap#size()}, reads every counter cell the other
     * event loops just wrote (and makes them pay for it at their next change).
     */
    private final AtomicLong occupancy = new AtomicLong();
    private final Clock clock;
    private final int maxEntries;
    private final long maxBytes;

    /**
     * A store bounded by {@code maxEntries} records and {@link #DEFAULT_MAX_BYTES}.
     *
     * @param clock      the time source for leases and retention
     * @param maxEntries the maximum number of records kept, 1 to {@link #MAX_ENTRIES_LIMIT}
     */
    public InMemoryIdempotencyStore(Clock clock, int maxEntries) {
        this(clock, maxEntries, DEFAULT_MAX_BYTES);
    }

    /**
     * @param clock      the time source for leases and retention
     * @param maxEntries the maximum number of records kept, 1 to {@link #MAX_ENTRIES_LIMIT}
     * @param maxBytes   the most heap the records may take, 64 KiB to {@link #MAX_BYTES_LIMIT}
     */
    public InMemoryIdempotencyStore(Clock clock, int maxEntries, long maxBytes) {
        this.clock = Objects.requireNonNull(clock, "clock");
        if (maxEntries < 1 || maxEntries > MAX_ENTRIES_LIMIT) {
            throw new IllegalArgumentException("maxEntries must be 1 to " + MAX_ENTRIES_LIMIT + " (use a shared store"
                + " for more records), was " + maxEntries);
        }
        if (maxBytes < 64 * 1024 || maxBytes > MAX_BYTES_LIMIT) {
            throw new IllegalArgumentException("maxBytes must be 65536 to " + MAX_BYTES_LIMIT + ", was " + maxBytes);
        }
        this.maxEntries = maxEntries;
        this.maxBytes = maxBytes;
        // sized up front: a map that grows under load rehashes on the callers' threads
        this.entries = new ConcurrentHashMap<>(Math.min(maxEntries, 1 << 20));
    }

    @Override
    public String describe() {
        return "in memory, this instance only, up to " + maxEntries + " records and " + (maxBytes >> 20) + " MiB";
    }

    /** @return records, bytes and how full the store is against the nearer of its two bounds, in percent */
    @Override
    public CompletionStage<Map<String, Object>> probe() {
        int records = entries.size();
        long held = bytes();
        double fill = Math.max(records / (double) maxEntries, held / (double) maxBytes);
        return CompletableFuture.completedFuture(Map.of("records", records, "maxEntries", maxEntries, "bytes", held,
            "maxBytes", maxBytes, "fillPercent", Math.round(fill * 1000) / 10.0));
    }

    @Override
    public CompletionStage<AcquireResult> acquire(String storeKey, byte[] fingerprint, Duration lease) {
        return acquire(storeKey, fingerprint, lease, null);
    }

    @Override
    public CompletionStage<AcquireResult> acquire(String storeKey, byte[] fingerprint, Duration lease, String traceparent) {
        IdempotencyStore.checkTraceparent(traceparent);
        Objects.requireNonNull(storeKey, "storeKey");
        Objects.requireNonNull(fingerprint, "fingerprint");
        Checks.positive(lease, "lease");
        long now = clock.millis();
        long leaseEnd = now + lease.toMillis();
        Created created = new Created();
        Object mapKey = HexKey.mapKey(storeKey);
        MemoryEntry existing = entries.compute(mapKey, (key, found) -> {
            if (found == null || found.isExpired(now)) {
                created.takeover = found != null && !found.completed();
                // a record keeps its map node's own key object: the one in hand is a copy of it
                created.entry = new MemoryEntry(found == null ? key : found.key, fingerprint.clone(), fingerprint.length,
                    tokens.incrementAndGet(), now, leaseEnd, traceparent);
                long replaced = found == null ? 0 : found.weight;
                created.occupancy = add(found == null ? 1 : 0, created.entry.weight - replaced);
                return created.entry;
            }
            return found;
        });
        if (created.entry != null) {
            // the bounds are checked after the record is in, so a replay or a duplicate never
            // pays for a second map lookup; a new record that finds no room is taken out again
            if (overBounds(created.occupancy, 0) && !makeRoom(created.occupancy, 0, now)) {
                if (entries.remove(mapKey, created.entry)) {
                    add(-1, -created.entry.weight);
                }
                return CompletableFuture.failedFuture(full());
            }
            return CompletableFuture.completedFuture(new AcquireResult.Acquired(created.entry.token, created.takeover));
        }
        // an existing record is immutable: safe to read outside compute
        AcquireResult answer;
        if (!existing.hasFingerprint(fingerprint)) {
            answer = new AcquireResult.Mismatch();
        } else if (existing.completed()) {
            answer = new AcquireResult.Replay(existing.response());
        } else {
            answer = new AcquireResult.InProgress(Duration.ofMillis(existing.deadline - now), existing.traceparent);
        }
        return CompletableFuture.completedFuture(answer);
    }

    @Override
    public CompletionStage<Boolean> complete(String storeKey, long fencingToken, StoredResponse response,
                                             Duration retention) {
        Objects.requireNonNull(response, "response");
        Checks.positive(retention, "retention");
        long now = clock.millis();
        long retentionEnd = now + retention.toMillis();
        Object mapKey = HexKey.mapKey(storeKey);
        MemoryEntry held = entries.get(mapKey);
        if (held == null || !held.isHeldWith(fencingToken)) {
            return done(false);
        }
        // the fingerprint of a fencing token's record never changes: the array is built outside
        // the map's lock, and the compute below only checks that the token still holds
        byte[] encoded = StoredResponseCodec.encode(held.data, held.fingerprintLength, response);
        long added = encoded.length - held.fingerprintLength;
        // a completion adds bytes, not records: only the byte bound can be passed here
        long before = occupancy.get();
        if (Occupancy.bytes(before) + added > maxBytes && !makeRoom(before, added, now) && !response.bodyOmitted()) {
            // no room for the body even after evicting every completed record: keep the outcome
            // without it (an omitted body, S15), so the operation stays protected and memory bounded
            encoded = StoredResponseCodec.encode(held.data, held.fingerprintLength, response.withoutBody());
            omitted(response.bodyLength(), now);
        }
        byte[] stored = encoded;
        MemoryEntry[] done = new MemoryEntry[1];
        entries.computeIfPresent(mapKey, (key, existing) -> {
            if (existing.isHeldWith(fencingToken)) {
                done[0] = new MemoryEntry(existing.key, stored, existing.fingerprintLength, fencingToken, existing.acquiredAt,
                    retentionEnd);
                add(0, done[0].weight - existing.weight);
                return done[0];
            }
            return existing;
        });
        if (done[0] != null) {
            completionOrder.add(done[0]);
        }
        return done(done[0] != null);
    }

    @Override
    public CompletionStage<Boolean> release(String storeKey, long fencingToken) {
        boolean[] done = new boolean[1];
        entries.computeIfPresent(HexKey.mapKey(storeKey), (key, existing) -> {
            if (existing.isHeldWith(fencingToken)) {
                done[0] = true;
                add(-1, -existing.weight);
                return null;
            }
            return existing;
        });
        return done(done[0]);
    }

    @Override
    public CompletionStage<Boolean> renew(String storeKey, long fencingToken, Duration lease) {
        Checks.positive(lease, "lease");
        long leaseEnd = clock.millis() + lease.toMillis();
        boolean[] done = new boolean[1];
        entries.computeIfPresent(HexKey.mapKey(storeKey), (key, existing) -> {
            if (existing.isHeldWith(fencingToken)) {
                done[0] = true;
                return new MemoryEntry(existing.key, existing.data, existing.fingerprintLength, fencingToken,
                    existing.acquiredAt, leaseEnd, existing.traceparent);
            }
            return existing;
        });
        return done(done[0]);
    }

    @Override
    public CompletionStage<Map<String, byte[]>> steps(String storeKey) {
        Objects.requireNonNull(storeKey, "storeKey");
        MemorySteps found = steps.get(HexKey.mapKey(storeKey));
        if (found == null || found.isExpired(clock.millis())) {
            return CompletableFuture.completedFuture(Map.of());
        }
        Map<String, byte[]> copy = new LinkedHashMap<>();
        found.results.forEach((name, result) -> copy.put(name, result.clone()));
        return CompletableFuture.completedFuture(copy);
    }

    /**
     * Counted against the byte bound like a response; when even evicting every completed record
     * leaves no room, fails with {@link IdempotencyStoreException} (a step is never dropped
     * silently, and its work's result goes back to the caller with the failure).
     */
    @Override
    public CompletionStage<Boolean> recordStep(String storeKey, long fencingToken, String step, byte[] result,
                                               Duration keep) {
        Objects.requireNonNull(storeKey, "storeKey");
        Objects.requireNonNull(step, "step");
        Objects.requireNonNull(result, "result");
        Checks.positive(keep, "keep");
        long now = clock.millis();
        Object mapKey = HexKey.mapKey(storeKey);
        MemoryEntry held = entries.get(mapKey);
        if (held == null || !held.isHeldWith(fencingToken)) {
            return done(false);
        }
        long added = MemorySteps.weight(step, result);
        long before = occupancy.get();
        if (Occupancy.bytes(before) + added > maxBytes && !makeRoom(before, added, now)) {
            return CompletableFuture.failedFuture(new IdempotencyStoreException("in-memory idempotency store is full:"
                + " no room for the " + result.length + " bytes of step '" + step + "' after evicting every completed"
                + " record; raise idempotency.store.memory.max-bytes, or use a shared store"));
        }
        byte[] copy = result.clone();
        long deadline = now + keep.toMillis();
        boolean[] done = new boolean[1];
        entries.computeIfPresent(mapKey, (key, existing) -> {
            if (existing.isHeldWith(fencingToken)) {
                done[0] = true;
                steps.compute(existing.key, (k, found) -> {
                    MemorySteps live = found == null || found.isExpired(now) ? MemorySteps.NONE : found;
                    if (found != null && live == MemorySteps.NONE) {
                        add(0, -found.weight);
                    }
                    if (live.results.containsKey(step)) {
                        return live == MemorySteps.NONE ? null : live; // the first result stays
                    }
                    MemorySteps next = live.with(step, copy, deadline);
                    add(0, next.weight - live.weight);
                    return next;
                });
            }
            return existing;
        });
        return done(done[0]);
    }

    @Override
    public CompletionStage<Boolean> discardSteps(String storeKey, long fencingToken) {
        Objects.requireNonNull(storeKey, "storeKey");
        boolean[] done = new boolean[1];
        entries.computeIfPresent(HexKey.mapKey(storeKey), (key, existing) -> {
            if (existing.isHeldWith(fencingToken)) {
                done[0] = true;
                dropSteps(existing.key);
            }
            return existing;
        });
        return done(done[0]);
    }

    private void dropSteps(Object mapKey) {
        MemorySteps dropped = steps.remove(mapKey);
        if (dropped != null) {
            add(0, -dropped.weight);
        }
    }

    private static CompletionStage<Boolean> done(boolean result) {
        return CompletableFuture.completedFuture(result);
    }

    /** Counts by visiting every record of this instance: a pass over the map, no lock held. */
    @Override
    public CompletionStage<RecordCounts> counts() {
        long now = clock.millis();
        long[] counts = new long[4];
        for (MemoryEntry e : entries.values()) {
            counts[(e.completed() ? 2 : 0) + (e.isExpired(now) ? 1 : 0)]++;
        }
        return CompletableFuture.completedFuture(new RecordCounts(counts[0], counts[1], counts[2], counts[3], true,
            Map.of("bytes", bytes(), "maxBytes", maxBytes, "records", entries.size(), "maxEntries", maxEntries)));
    }

    /** A pass over the map, no lock held. */
    @Override
    public CompletionStage<List<RecordInfo>> inProgressStartedBefore(Instant startedBefore, int limit) {
        Objects.requireNonNull(startedBefore, "startedBefore");
        Checks.atLeast(limit, 1, "limit");
        long before = startedBefore.toEpochMilli();
        return CompletableFuture.completedFuture(entries.values().stream()
            .filter(e -> !e.completed() && e.acquiredAt <= before)
            .sorted(Comparator.comparingLong(e -> e.acquiredAt))
            .limit(limit)
            .map(MemoryEntry::info)
            .toList());
    }

    @Override
    public CompletionStage<Optional<RecordInfo>> find(String storeKey) {
        Objects.requireNonNull(storeKey, "storeKey");
        return CompletableFuture.completedFuture(Optional.ofNullable(entries.get(HexKey.mapKey(storeKey))).map(MemoryEntry::info));
    }

    /**
     * Removes every record whose lease or retention has ended.
     *
     * @return how many were removed
     */
    public int purgeExpired() {
        long now = clock.millis();
        int removed = 0;
        for (MemoryEntry e : entries.values()) {
            if (e.isExpired(now) && entries.remove(e.key, e)) {
                add(-1, -e.weight);
                removed++;
            }
        }
        for (Map.Entry<Object, MemorySteps> e : steps.entrySet()) {
            if (e.getValue().isExpired(now) && steps.remove(e.getKey(), e.getValue())) {
                add(0, -e.getValue().weight);
            }
        }
        // forget purged records at the head of the completion order, so it stays about as long
        // as the map (with one retention for all routes, purges remove exactly the head)
        MemoryEntry head;
        while ((head = completionOrder.peek()) != null && entries.get(head.key) != head) {
            completionOrder.remove(head);
        }
        return removed;
    }

    /** @return the number of records held, live or not yet purged */
    public int size() {
        return entries.size();
    }

    /** @return whether every record holds its map node's key object, not a copy (one key per record; for tests) */
    boolean keysShared() {
        for (Map.Entry<Object, MemoryEntry> e : entries.entrySet()) {
            if (e.getKey() != e.getValue().key) {
                return false;
            }
        }
        return true;
    }

    /** @return the heap the records take, as the store counts it against its byte bound */
    public long bytes() {
        return Occupancy.bytes(occupancy.get());
    }

    /**
     * @return the records and bytes as counted, next to the records and bytes the map holds now
     *     (for tests: at rest, the two agree)
     */
    long[] countedAndHeld() {
        long counted = occupancy.get();
        long bytesHeld = 0;
        int records = 0;
        for (MemoryEntry e : entries.values()) {
            bytesHeld += e.weight;
            records++;
        }
        for (MemorySteps st : steps.values()) {
            bytesHeld += st.weight;
        }
        return new long[] {Occupancy.records(counted), Occupancy.bytes(counted), records, bytesHeld};
    }

    /** @return whether a store at {@code occupancy}, with {@code weight} more bytes, passes a bound */
    private boolean overBounds(long occupancy, long weight) {
        return Occupancy.bytes(occupancy) + weight > maxBytes || Occupancy.records(occupancy) > maxEntries;
    }

    /** Counts {@code records} more records and {@code bytes} more bytes; @return the new occupancy */
    private long add(int records, long bytes) {
        return occupancy.addAndGet(Occupancy.of(records, bytes));
    }

    /**
     * Evicts the earliest-completed records until the records held are within the entry bound
     * and {@code weight} more bytes fit; lock-free, so concurrent callers each evict what they need (a stale queue entry, whose record was replaced or purged, is
     * skipped). When no completed record is left, purges expired records (at most once a second).
     *
     * @param seen      the occupancy the caller last saw
     * @param nowMillis the store clock's time, which the caller has read already
     * @return whether there is room now
     */
    private boolean makeRoom(long seen, long weight, long nowMillis) {
        long now = seen;
        while (overBounds(now, weight)) {
            MemoryEntry oldest = completionOrder.poll();
            if (oldest == null) {
                purgeWhenFull();
                return !overBounds(occupancy.get(), weight);
            }
            if (entries.remove(oldest.key, oldest)) {
                dropSteps(oldest.key); // a completed record's steps are never needed again
                now = add(-1, -oldest.weight);
                evicted(now, nowMillis);
            } else {
                now = occupancy.get(); // a stale queue entry: others may have made room meanwhile
            }
        }
        return true;
    }

    private IdempotencyStoreException full() {
        long now = occupancy.get();
        return new IdempotencyStoreException("in-memory idempotency store is full: " + Occupancy.records(now)
            + " records, " + Occupancy.bytes(now) + " of " + maxBytes + " bytes, every one a request in progress; raise"
            + " idempotency.store.memory.max-entries or .max-bytes, or use a shared store");
    }

    private void omitted(int bodyLength, long nowMillis) {
        long count = omittedWarnings.count(nowMillis);
        if (count > 0) {
            LOG.warn("idempotency in-memory store full ({} of {} bytes held by requests in progress): stored {}"
                + " responses without their body (the latest {} bytes); their replays say Idempotency-Replay: omitted."
                + " Raise idempotency.store.memory.max-bytes or use a shared store", bytes(), maxBytes, count,
                bodyLength);
        }
    }

    /** @return what a record with this key and array counts against the byte bound */
    static long weight(Object key, byte[] data) {
        long keyWeight = key instanceof HexKey ? HEX_KEY_WEIGHT : STRING_KEY_OVERHEAD + ((String) key).length();
        return RECORD_OVERHEAD + keyWeight + data.length;
    }

    private void evicted(long occupancy, long nowMillis) {
        long count = evictionWarnings.count(nowMillis);
        if (count > 0) {
            LOG.warn("idempotency in-memory store full ({} records, {} of {} bytes): evicted {} earliest-completed"
                + " records before their retention ended; retries of those keys will run again. Raise"
                + " idempotency.store.memory.max-entries or .max-bytes, or use a shared store",
                Occupancy.records(occupancy), Occupancy.bytes(occupancy), maxBytes, count);
        }
    }

    /** No completed record is left to evict: purge expired leases, at most once a second. */
    private void purgeWhenFull() {
        long last = lastFullPurge.get();
        long now = clock.millis();
        if ((last == Long.MIN_VALUE || now - last >= PURGE_AT_MOST_EVERY_MILLIS) && lastFullPurge.compareAndSet(last, now)) {
            purgeExpired(); // abandoned in-progress records whose lease ran out
        }
    }

    /** What an acquire's {@code compute} created, if anything. */
    private static final class Created {
        MemoryEntry entry;
        boolean takeover;
        /** The store's occupancy right after the new record was counted. */
        long occupancy;
    }

    /** Events counted between WARN lines, so a full store logs at most once a minute per kind. */
}
