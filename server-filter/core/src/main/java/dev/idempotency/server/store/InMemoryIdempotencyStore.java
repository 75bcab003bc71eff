package dev.idempotency.server.store;

import dev.idempotency.server.Checks;
import java.security.MessageDigest;
import java.time.Clock;
import java.time.Duration;
import java.time.Instant;
import java.util.Map;
import java.util.Objects;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.atomic.AtomicLong;

import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The default store: records in a {@link ConcurrentHashMap} of this JVM. Correct for a single
 * application instance only; use the PostgreSQL or Redis store when several instances serve
 * the same API.
 *
 * <h2>Layout</h2>
 * One map entry per store key, holding: state (in progress or completed), the 32-byte
 * fingerprint, the fencing token, the lease deadline (in progress) or the retention deadline
 * (completed), and the {@link StoredResponse}. Deadlines are read from the injected
 * {@link Clock}, so tests move time instead of sleeping. Fencing tokens come from one counter
 * per store, so a token is never reused.
 *
 * <h2>Bounds</h2>
 * About {@code maxEntries} records (concurrent acquires may overshoot by the number of threads).
 * When a new record would exceed it, the earliest-completed records are evicted (a tenth of
 * the capacity at a time, in constant time per record, logged at WARN, since a retry of an
 * evicted key runs again), then expired in-progress records are purged, and an acquire that
 * still finds the store full of live in-progress records fails with
 * {@link IdempotencyStoreException} (answered as 503), never by dropping a running request's
 * lock. The bound counts records, not bytes: with the default 1 MiB stored-body cap, size
 * {@code maxEntries} for the heap you can spare.
 *
 * <p>Every operation is atomic per key ({@link ConcurrentHashMap#compute}) and runs on the
 * calling thread without waiting for anything but that map's own short per-bin locks; the stages
 * it returns are already complete.
 */
public final class InMemoryIdempotencyStore implements IdempotencyStore {

    /** The default maximum number of records. */
    public static final int DEFAULT_MAX_ENTRIES = 100_000;

    private static final Logger LOG = LoggerFactory.getLogger(InMemoryIdempotencyStore.class);

    private final ConcurrentHashMap<String, Entry> entries = new ConcurrentHashMap<>();
    private final AtomicLong tokens = new AtomicLong();
    private final Object evictionLock = new Object();
    /** Completed records in the order they completed: eviction takes the head, O(1) each. */
    private final ConcurrentLinkedQueue<Completed> completionOrder = new ConcurrentLinkedQueue<>();
    private final Clock clock;
    private final int maxEntries;

    /**
     * @param clock      the time source for leases and retention
     * @param maxEntries the maximum number of records kept, at least 1
     */
    public InMemoryIdempotencyStore(Clock clock, int maxEntries) {
        this.clock = Objects.requireNonNull(clock, "clock");
        if (maxEntries < 1) {
            throw new IllegalArgumentException("maxEntries must be at least 1, was " + maxEntries);
        }
        this.maxEntries = maxEntries;
    }

    @Override
    public CompletionStage<AcquireResult> acquire(String storeKey, byte[] fingerprint, Duration lease) {
        Objects.requireNonNull(storeKey, "storeKey");
        Objects.requireNonNull(fingerprint, "fingerprint");
        Checks.positive(lease, "lease");
        Instant now = clock.instant();
        if (entries.size() >= maxEntries && !entries.containsKey(storeKey)) {
            try {
                makeRoom();
            } catch (IdempotencyStoreException e) {
                return CompletableFuture.failedFuture(e);
            }
        }
        AcquireResult[] result = new AcquireResult[1];
        entries.compute(storeKey, (key, existing) -> {
            if (existing == null || existing.isExpired(now)) {
                boolean takeover = existing != null && existing.response == null;
                long token = tokens.incrementAndGet();
                result[0] = new AcquireResult.Acquired(token, takeover);
                return Entry.inProgress(fingerprint.clone(), token, now.plus(lease));
            }
            if (!MessageDigest.isEqual(existing.fingerprint, fingerprint)) {
                result[0] = new AcquireResult.Mismatch();
            } else if (existing.response != null) {
                result[0] = new AcquireResult.Replay(existing.response);
            } else {
                result[0] = new AcquireResult.InProgress(Duration.between(now, existing.deadline));
            }
            return existing;
        });
        return CompletableFuture.completedFuture(result[0]);
    }

    @Override
    public CompletionStage<Boolean> complete(String storeKey, long fencingToken, StoredResponse response,
                                             Duration retention) {
        Objects.requireNonNull(response, "response");
        Checks.positive(retention, "retention");
        Instant now = clock.instant();
        Entry[] done = new Entry[1];
        entries.computeIfPresent(storeKey, (key, existing) -> {
            if (existing.response == null && existing.token == fencingToken) {
                done[0] = new Entry(existing.fingerprint, fencingToken, now.plus(retention), response);
                return done[0];
            }
            return existing;
        });
        if (done[0] != null) {
            completionOrder.add(new Completed(storeKey, done[0]));
        }
        return done(done[0] != null);
    }

    @Override
    public CompletionStage<Boolean> release(String storeKey, long fencingToken) {
        boolean[] done = new boolean[1];
        entries.computeIfPresent(storeKey, (key, existing) -> {
            if (existing.response == null && existing.token == fencingToken) {
                done[0] = true;
                return null;
            }
            return existing;
        });
        return done(done[0]);
    }

    @Override
    public CompletionStage<Boolean> renew(String storeKey, long fencingToken, Duration lease) {
        Checks.positive(lease, "lease");
        Instant now = clock.instant();
        boolean[] done = new boolean[1];
        entries.computeIfPresent(storeKey, (key, existing) -> {
            if (existing.response == null && existing.token == fencingToken) {
                done[0] = true;
                return Entry.inProgress(existing.fingerprint, fencingToken, now.plus(lease));
            }
            return existing;
        });
        return done(done[0]);
    }

    private static CompletionStage<Boolean> done(boolean result) {
        return CompletableFuture.completedFuture(result);
    }

    /**
     * Removes every record whose lease or retention has ended.
     *
     * @return how many were removed
     */
    public int purgeExpired() {
        Instant now = clock.instant();
        int before = entries.size();
        entries.values().removeIf(e -> e.isExpired(now));
        // forget purged records at the head of the completion order, so it stays about as long
        // as the map (with one retention for all routes, purges remove exactly the head)
        Completed head;
        while ((head = completionOrder.peek()) != null && entries.get(head.key) != head.entry) {
            completionOrder.remove(head);
        }
        return Math.max(0, before - entries.size());
    }

    /** @return the number of records held, live or not yet purged */
    public int size() {
        return entries.size();
    }

    private void makeRoom() {
        // One thread at a time: concurrent callers would pick the same oldest records, all but
        // one would evict nothing, and then report the store full of in-progress requests.
        synchronized (evictionLock) {
            if (entries.size() < maxEntries) {
                return; // another thread made room meanwhile
            }
            evict();
        }
    }

    private void evict() {
        int toEvict = Math.max(1, maxEntries / 10);
        int evicted = 0;
        Completed oldest;
        while (evicted < toEvict && (oldest = completionOrder.poll()) != null) {
            if (entries.remove(oldest.key, oldest.entry)) {
                evicted++;
            }
        }
        if (evicted > 0) {
            LOG.warn("idempotency in-memory store full ({} records): evicted the {} earliest-completed records"
                + " before their retention ended; retries of those keys will run again. Raise"
                + " idempotency.store.memory.max-entries or use a shared store", maxEntries, evicted);
        }
        if (evicted > 0) {
            // room was made; writers racing past the size check may overshoot by a few records,
            // which is no reason to refuse this one
            return;
        }
        purgeExpired(); // abandoned in-progress records whose lease ran out
        if (entries.size() >= maxEntries) {
            throw new IdempotencyStoreException("in-memory idempotency store is full: " + maxEntries
                + " requests in progress; raise idempotency.store.memory.max-entries or use a shared store");
        }
    }

    /** A completed record as it was when it completed; stale once the map holds another entry for the key. */
    private record Completed(String key, Entry entry) {
    }

    /** One record; {@code response == null} means in progress and {@code deadline} is the lease end. */
    private record Entry(byte[] fingerprint, long token, Instant deadline, StoredResponse response) {
        static Entry inProgress(byte[] fingerprint, long token, Instant leaseEnd) {
            return new Entry(fingerprint, token, leaseEnd, null);
        }

        boolean isExpired(Instant now) {
            return !now.isBefore(deadline);
        }
    }
}
