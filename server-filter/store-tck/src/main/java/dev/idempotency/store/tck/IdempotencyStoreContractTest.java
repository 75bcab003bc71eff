package dev.idempotency.store.tck;

import dev.idempotency.testsupport.MutableClock;

import dev.idempotency.server.store.AcquireResult;
import dev.idempotency.server.store.IdempotencyStore;
import dev.idempotency.server.store.RecordCounts;
import dev.idempotency.server.store.RecordInfo;
import dev.idempotency.server.store.StoreInspection;
import dev.idempotency.server.store.StoredResponse;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.DisplayName;
import org.junit.jupiter.api.Test;

import java.nio.charset.StandardCharsets;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.HexFormat;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;

import static org.assertj.core.api.Assertions.assertThat;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

/**
 * The contract every {@link IdempotencyStore} must pass (CONTRACT S17). Extend it, return the
 * store under test from {@link #store(MutableClock)}, and the suite checks acquire, replay,
 * mismatch, conflict, lease expiry and takeover, fencing, release, renewal, retention expiry,
 * binary bodies, a race of many threads for one key, and the same race fired from one thread
 * without waiting (the asynchronous SPI lets a caller have many calls in flight); for a store
 * that also implements {@link StoreInspection} (CONTRACT O3), what it reports.
 *
 * <p>Every call goes through the asynchronous SPI; the helpers ({@link #acquire}, ...) wait for
 * the stage with a timeout, so a store whose stage never completes fails the suite instead of
 * hanging it.
 *
 * <p>Time is the {@link MutableClock} handed to the store: stores must read "now" from it, so
 * the suite moves time instead of sleeping. Each test uses fresh random keys, so a store backed
 * by a shared server needs no cleanup between tests.
 */
public abstract class IdempotencyStoreContractTest {

    protected static final Duration LEASE = Duration.ofSeconds(30);
    protected static final Duration RETENTION = Duration.ofHours(24);

    protected MutableClock clock;
    protected IdempotencyStore store;

    /**
     * @param clock the time source the store must use
     * @return the store under test, empty or holding only records of other keys
     */
    protected abstract IdempotencyStore store(MutableClock clock);

    /** @return how many threads race for one key in {@link #racingThreadsAcquireExactlyOnce()} */
    protected int racingThreads() {
        return 64;
    }

    @BeforeEach
    void createStore() {
        clock = new MutableClock();
        store = store(clock);
    }

    protected static String newKey() {
        try {
            byte[] hash = MessageDigest.getInstance("SHA-256")
                .digest(UUID.randomUUID().toString().getBytes(StandardCharsets.UTF_8));
            return HexFormat.of().formatHex(hash);
        } catch (NoSuchAlgorithmException e) {
            throw new IllegalStateException(e);
        }
    }

    /** A fingerprint shaped like the filter's: a version byte, then 32 bytes of SHA-256. */
    protected static byte[] fingerprint(String text) {
        try {
            byte[] hash = MessageDigest.getInstance("SHA-256").digest(text.getBytes(StandardCharsets.UTF_8));
            byte[] fp = new byte[hash.length + 1];
            fp[0] = 2;
            System.arraycopy(hash, 0, fp, 1, hash.length);
            return fp;
        } catch (NoSuchAlgorithmException e) {
            throw new IllegalStateException(e);
        }
    }

    /** {@link IdempotencyStore#acquire}, waited for. */
    protected AcquireResult acquire(String key, byte[] fingerprint, Duration lease) {
        return join(store.acquire(key, fingerprint, lease));
    }

    /** {@link IdempotencyStore#complete}, waited for. */
    protected boolean complete(String key, long token, StoredResponse response, Duration retention) {
        return join(store.complete(key, token, response, retention));
    }

    /** {@link IdempotencyStore#release}, waited for. */
    protected boolean release(String key, long token) {
        return join(store.release(key, token));
    }

    /** {@link IdempotencyStore#renew}, waited for. */
    protected boolean renew(String key, long token, Duration lease) {
        return join(store.renew(key, token, lease));
    }

    /** Waits at most 30 s for {@code stage}; its failure is rethrown unwrapped. */
    protected static <T> T join(CompletionStage<T> stage) {
        try {
            return stage.toCompletableFuture().get(30, TimeUnit.SECONDS);
        } catch (ExecutionException e) {
            if (e.getCause() instanceof RuntimeException r) {
                throw r;
            }
            throw new IllegalStateException(e.getCause());
        } catch (TimeoutException e) {
            throw new AssertionError("the store's stage did not complete within 30 s", e);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new IllegalStateException(e);
        }
    }

    protected static StoredResponse response(int status, String body) {
        Map<String, List<String>> headers = new LinkedHashMap<>();
        headers.put("Content-Type", List.of("application/json"));
        headers.put("Location", List.of("/payments/1"));
        return new StoredResponse(status, headers, body.getBytes(StandardCharsets.UTF_8), false);
    }

    private long acquired(String key, byte[] fp) {
        AcquireResult r = acquire(key, fp, LEASE);
        assertThat(r).isInstanceOf(AcquireResult.Acquired.class);
        return ((AcquireResult.Acquired) r).fencingToken();
    }

    @Test
    @DisplayName("S10: acquire on an absent key creates an in-progress record")
    void acquireAbsentKey() {
        AcquireResult r = acquire(newKey(), fingerprint("a"), LEASE);
        assertThat(r).isInstanceOf(AcquireResult.Acquired.class);
        assertThat(((AcquireResult.Acquired) r).takeover()).isFalse();
    }

    @Test
    @DisplayName("S10/S13: a completed record with the same fingerprint replays the stored response")
    void completedRecordReplays() {
        String key = newKey();
        long token = acquired(key, fingerprint("a"));
        StoredResponse resp = response(201, "{\"id\":1}");
        assertThat(complete(key, token, resp, RETENTION)).isTrue();

        AcquireResult r = acquire(key, fingerprint("a"), LEASE);
        assertThat(r).isEqualTo(new AcquireResult.Replay(resp));
        assertThat(((AcquireResult.Replay) r).response().headers())
            .containsExactly(Map.entry("Content-Type", List.of("application/json")),
                Map.entry("Location", List.of("/payments/1")));
    }

    @Test
    @DisplayName("S9: same key, other fingerprint on a completed record is a mismatch and leaves the record")
    void mismatchOnCompleted() {
        String key = newKey();
        long token = acquired(key, fingerprint("a"));
        StoredResponse resp = response(200, "ok");
        complete(key, token, resp, RETENTION);

        assertThat(acquire(key, fingerprint("b"), LEASE)).isInstanceOf(AcquireResult.Mismatch.class);
        assertThat(acquire(key, fingerprint("a"), LEASE)).isEqualTo(new AcquireResult.Replay(resp));
    }

    @Test
    @DisplayName("S11: other fingerprint while in flight is a mismatch, not a conflict")
    void mismatchWhileInProgress() {
        String key = newKey();
        acquired(key, fingerprint("a"));
        assertThat(acquire(key, fingerprint("b"), LEASE)).isInstanceOf(AcquireResult.Mismatch.class);
        assertThat(acquire(key, fingerprint("a"), LEASE)).isInstanceOf(AcquireResult.InProgress.class);
    }

    @Test
    @DisplayName("S10/S11: a live lease answers in-progress with the remaining lease")
    void inProgressReportsRemainingLease() {
        String key = newKey();
        acquired(key, fingerprint("a"));
        clock.advance(Duration.ofSeconds(10));
        AcquireResult r = acquire(key, fingerprint("a"), LEASE);
        assertThat(r).isInstanceOf(AcquireResult.InProgress.class);
        Duration remaining = ((AcquireResult.InProgress) r).remainingLease();
        assertThat(remaining).isBetween(Duration.ofSeconds(19), Duration.ofSeconds(20));
    }

    @Test
    @DisplayName("S10/S12: an expired lease is taken over with a new, larger fencing token")
    void expiredLeaseIsTakenOver() {
        String key = newKey();
        long first = acquired(key, fingerprint("a"));
        clock.advance(LEASE.plusSeconds(1));
        AcquireResult r = acquire(key, fingerprint("a"), LEASE);
        assertThat(r).isInstanceOf(AcquireResult.Acquired.class);
        AcquireResult.Acquired second = (AcquireResult.Acquired) r;
        assertThat(second.takeover()).isTrue();
        assertThat(second.fencingToken()).isGreaterThan(first);
    }

    @Test
    @DisplayName("S10: an expired lease is taken over whatever the new request's fingerprint")
    void expiredLeaseTakenOverWithOtherFingerprint() {
        String key = newKey();
        acquired(key, fingerprint("a"));
        clock.advance(LEASE.plusSeconds(1));
        AcquireResult r = acquire(key, fingerprint("b"), LEASE);
        assertThat(r).isInstanceOf(AcquireResult.Acquired.class);
        assertThat(((AcquireResult.Acquired) r).takeover()).isTrue();
        // the record now belongs to the new fingerprint
        assertThat(acquire(key, fingerprint("a"), LEASE)).isInstanceOf(AcquireResult.Mismatch.class);
    }

    @Test
    @DisplayName("S12: a holder whose lease expired but was not taken over still completes; its result replays")
    void lateCompletionWithoutTakeover() {
        String key = newKey();
        long token = acquired(key, fingerprint("a"));
        clock.advance(LEASE.plusSeconds(5));
        StoredResponse late = response(200, "late");
        assertThat(complete(key, token, late, RETENTION)).isTrue();
        assertThat(acquire(key, fingerprint("a"), LEASE)).isEqualTo(new AcquireResult.Replay(late));
    }

    @Test
    @DisplayName("S12: the old holder's completion is fenced after a takeover; the new holder's result stands")
    void completionFencedAfterTakeover() {
        String key = newKey();
        long oldToken = acquired(key, fingerprint("a"));
        clock.advance(LEASE.plusSeconds(1));
        long newToken = ((AcquireResult.Acquired) acquire(key, fingerprint("a"), LEASE)).fencingToken();

        assertThat(complete(key, oldToken, response(200, "old"), RETENTION)).isFalse();
        assertThat(release(key, oldToken)).isFalse();
        assertThat(renew(key, oldToken, LEASE)).isFalse();
        assertThat(acquire(key, fingerprint("a"), LEASE)).isInstanceOf(AcquireResult.InProgress.class);

        StoredResponse fresh = response(200, "new");
        assertThat(complete(key, newToken, fresh, RETENTION)).isTrue();
        assertThat(complete(key, oldToken, response(200, "old"), RETENTION)).isFalse();
        assertThat(acquire(key, fingerprint("a"), LEASE)).isEqualTo(new AcquireResult.Replay(fresh));
    }

    @Test
    @DisplayName("S12: a completed record cannot be completed again, even with its own token")
    void completeIsOnce() {
        String key = newKey();
        long token = acquired(key, fingerprint("a"));
        StoredResponse first = response(200, "first");
        assertThat(complete(key, token, first, RETENTION)).isTrue();
        assertThat(complete(key, token, response(200, "second"), RETENTION)).isFalse();
        assertThat(release(key, token)).isFalse();
        assertThat(acquire(key, fingerprint("a"), LEASE)).isEqualTo(new AcquireResult.Replay(first));
    }

    @Test
    @DisplayName("S12: renewal keeps a running request's lease alive past its first deadline")
    void renewExtendsLease() {
        String key = newKey();
        long token = acquired(key, fingerprint("a"));
        clock.advance(Duration.ofSeconds(20));
        assertThat(renew(key, token, LEASE)).isTrue();
        clock.advance(Duration.ofSeconds(20));
        assertThat(acquire(key, fingerprint("a"), LEASE)).isInstanceOf(AcquireResult.InProgress.class);
        assertThat(complete(key, token, response(200, "ok"), RETENTION)).isTrue();
    }

    @Test
    @DisplayName("S14: release removes the in-progress record so the next request runs again")
    void releaseFreesKey() {
        String key = newKey();
        long token = acquired(key, fingerprint("a"));
        assertThat(release(key, token)).isTrue();
        AcquireResult r = acquire(key, fingerprint("b"), LEASE);
        assertThat(r).isInstanceOf(AcquireResult.Acquired.class);
        assertThat(((AcquireResult.Acquired) r).takeover()).isFalse();
        assertThat(((AcquireResult.Acquired) r).fencingToken()).isGreaterThan(token);
    }

    @Test
    @DisplayName("S16: after retention the key runs as a new request")
    void retentionExpiry() {
        String key = newKey();
        long token = acquired(key, fingerprint("a"));
        complete(key, token, response(200, "ok"), Duration.ofMinutes(10));
        clock.advance(Duration.ofMinutes(9));
        assertThat(acquire(key, fingerprint("a"), LEASE)).isInstanceOf(AcquireResult.Replay.class);
        clock.advance(Duration.ofMinutes(2));
        AcquireResult r = acquire(key, fingerprint("b"), LEASE);
        assertThat(r).isInstanceOf(AcquireResult.Acquired.class);
        assertThat(((AcquireResult.Acquired) r).takeover()).isFalse();
    }

    @Test
    @DisplayName("S12/S16: a token is never reused across records of one key: expired, released and re-created"
        + " records each get a larger token, and no earlier token acts on a later record")
    void tokensNeverReusedAcrossRecords() {
        String key = newKey();
        java.util.List<Long> tokens = new java.util.ArrayList<>();
        // 1. completed, then past its retention
        long t1 = acquired(key, fingerprint("a"));
        tokens.add(t1);
        assertThat(complete(key, t1, response(200, "first"), Duration.ofMinutes(1))).isTrue();
        clock.advance(Duration.ofMinutes(2));
        // 2. re-created after the retention ended, then released
        long t2 = acquired(key, fingerprint("b"));
        tokens.add(t2);
        assertThat(release(key, t2)).isTrue();
        // 3. re-created after a release, then its lease runs out
        long t3 = acquired(key, fingerprint("c"));
        tokens.add(t3);
        clock.advance(LEASE.plusSeconds(1));
        // 4. taken over
        long t4 = acquired(key, fingerprint("d"));
        tokens.add(t4);
        assertThat(tokens).doesNotHaveDuplicates().isSorted();
        for (long old : tokens.subList(0, 3)) {
            assertThat(complete(key, old, response(200, "stale"), RETENTION)).as("token %d", old).isFalse();
            assertThat(renew(key, old, LEASE)).as("token %d", old).isFalse();
            assertThat(release(key, old)).as("token %d", old).isFalse();
        }
        assertThat(complete(key, t4, response(201, "current"), RETENTION)).isTrue();
        assertThat(acquire(key, fingerprint("d"), LEASE)).isInstanceOfSatisfying(AcquireResult.Replay.class,
            r -> assertThat(r.response().status()).isEqualTo(201));
    }

    @Test
    @DisplayName("S13/S17: binary bodies (every byte value) and multi-valued headers round-trip exactly")
    void binaryBodiesRoundTrip() {
        String key = newKey();
        long token = acquired(key, fingerprint("a"));
        byte[] body = new byte[512];
        for (int i = 0; i < body.length; i++) {
            body[i] = (byte) i;
        }
        Map<String, List<String>> headers = new LinkedHashMap<>();
        headers.put("Content-Type", List.of("application/octet-stream"));
        headers.put("ETag", List.of("\"v1\""));
        headers.put("Content-Language", List.of("en", "de"));
        StoredResponse resp = new StoredResponse(200, headers, body, false);
        complete(key, token, resp, RETENTION);
        AcquireResult.Replay replay = (AcquireResult.Replay) acquire(key, fingerprint("a"), LEASE);
        assertThat(replay.response().body()).isEqualTo(body);
        assertThat(replay.response()).isEqualTo(resp);
    }

    @Test
    @DisplayName("S13: a reason phrase the route set itself is kept and replayed; the standard one is not stored")
    void reasonPhraseRoundTrips() {
        String own = newKey();
        long t1 = acquired(own, fingerprint("a"));
        StoredResponse fine = new StoredResponse(200, Map.of("Content-Type", List.of("text/plain")),
            "ok".getBytes(StandardCharsets.UTF_8), false, "Fine Thanks");
        complete(own, t1, fine, RETENTION);
        String standard = newKey();
        long t2 = acquired(standard, fingerprint("a"));
        complete(standard, t2, response(201, "made"), RETENTION);

        AcquireResult.Replay replay = (AcquireResult.Replay) acquire(own, fingerprint("a"), LEASE);
        assertThat(replay.response().reason()).isEqualTo("Fine Thanks");
        assertThat(replay.response()).isEqualTo(fine);
        assertThat(((AcquireResult.Replay) acquire(standard, fingerprint("a"), LEASE)).response().reason()).isNull();
    }

    @Test
    @DisplayName("S15/S17: an omitted body and an empty body are told apart")
    void omittedBodyFlagRoundTrips() {
        String omittedKey = newKey();
        long t1 = acquired(omittedKey, fingerprint("a"));
        StoredResponse omitted = new StoredResponse(200, Map.of("Content-Type", List.of("text/plain")), new byte[0], true);
        complete(omittedKey, t1, omitted, RETENTION);
        String emptyKey = newKey();
        long t2 = acquired(emptyKey, fingerprint("a"));
        StoredResponse empty = new StoredResponse(204, Map.of(), new byte[0], false);
        complete(emptyKey, t2, empty, RETENTION);

        assertThat(acquire(omittedKey, fingerprint("a"), LEASE)).isEqualTo(new AcquireResult.Replay(omitted));
        assertThat(acquire(emptyKey, fingerprint("a"), LEASE)).isEqualTo(new AcquireResult.Replay(empty));
    }

    @Test
    @DisplayName("S6/S17: records of different store keys never interfere")
    void keysAreIndependent() {
        String k1 = newKey();
        String k2 = newKey();
        long t1 = acquired(k1, fingerprint("a"));
        long t2 = acquired(k2, fingerprint("a"));
        complete(k1, t1, response(200, "one"), RETENTION);
        assertThat(acquire(k2, fingerprint("a"), LEASE)).isInstanceOf(AcquireResult.InProgress.class);
        assertThat(release(k1, t2)).isFalse();
        assertThat(acquire(k1, fingerprint("a"), LEASE)).isEqualTo(new AcquireResult.Replay(response(200, "one")));
    }

    @Test
    @DisplayName("S7/S9/S17: fingerprints are compared byte for byte, version byte included")
    void fingerprintsAreOpaqueBytes() {
        String key = newKey();
        byte[] fp = fingerprint("a");
        long token = acquired(key, fp);
        complete(key, token, response(200, "ok"), RETENTION);
        byte[] otherVersion = fp.clone();
        otherVersion[0] = 1;
        assertThat(acquire(key, otherVersion, LEASE)).isInstanceOf(AcquireResult.Mismatch.class);
        byte[] lastByte = fp.clone();
        lastByte[lastByte.length - 1] ^= 1;
        assertThat(acquire(key, lastByte, LEASE)).isInstanceOf(AcquireResult.Mismatch.class);
        assertThat(acquire(key, fp.clone(), LEASE)).isInstanceOf(AcquireResult.Replay.class);
    }

    @Test
    @DisplayName("S10/S17: many acquires of one key in flight at once from ONE thread: exactly one acquires")
    void pipelinedAcquiresFromOneThread() {
        String key = newKey();
        byte[] fp = fingerprint("pipelined");
        int n = racingThreads();
        List<CompletableFuture<AcquireResult>> inFlight = new ArrayList<>();
        for (int i = 0; i < n; i++) {
            inFlight.add(store.acquire(key, fp, LEASE).toCompletableFuture());
        }
        List<AcquireResult> results = inFlight.stream().map(IdempotencyStoreContractTest::join).toList();
        assertThat(results).filteredOn(r -> r instanceof AcquireResult.Acquired).hasSize(1);
        assertThat(results).filteredOn(r -> r instanceof AcquireResult.InProgress).hasSize(n - 1);
    }

    @Test
    @DisplayName("S12/S17: completions of many keys in flight at once all land, each replayed with its own body")
    void pipelinedCompletions() {
        int n = 32;
        List<String> keys = new ArrayList<>();
        List<CompletableFuture<Boolean>> done = new ArrayList<>();
        for (int i = 0; i < n; i++) {
            String key = newKey();
            keys.add(key);
            long token = acquired(key, fingerprint("p" + i));
            done.add(store.complete(key, token, response(200, "body-" + i), RETENTION).toCompletableFuture());
        }
        assertThat(done.stream().map(IdempotencyStoreContractTest::join)).containsOnly(true);
        for (int i = 0; i < n; i++) {
            assertThat(acquire(keys.get(i), fingerprint("p" + i), LEASE))
                .isEqualTo(new AcquireResult.Replay(response(200, "body-" + i)));
        }
    }


    private StoreInspection inspection() {
        assumeTrue(store instanceof StoreInspection, "the store offers no StoreInspection (optional, CONTRACT O3)");
        return (StoreInspection) store;
    }

    @Test
    @DisplayName("O3: find reports a record's state, token and timing, in progress and completed, never its body")
    void findReportsStateAndTiming() {
        StoreInspection inspection = inspection();
        String key = newKey();
        Instant acquiredAt = clock.instant();
        long token = acquired(key, fingerprint("a"));
        RecordInfo running = join(inspection.find(key)).orElseThrow();
        assertThat(running.storeKey()).isEqualTo(key);
        assertThat(running.state()).isEqualTo(RecordInfo.State.IN_PROGRESS);
        assertThat(running.fencingToken()).isEqualTo(token);
        assertThat(running.startedAt()).isEqualTo(acquiredAt);
        assertThat(running.deadline()).isEqualTo(acquiredAt.plus(LEASE));
        assertThat(running.expired(clock.instant())).isFalse();

        clock.advance(Duration.ofSeconds(5));
        assertThat(renew(key, token, LEASE)).isTrue();
        assertThat(join(inspection.find(key)).orElseThrow().deadline()).isEqualTo(clock.instant().plus(LEASE));
        assertThat(complete(key, token, response(201, "{\"id\":\"pay_1\"}"), RETENTION)).isTrue();
        RecordInfo done = join(inspection.find(key)).orElseThrow();
        assertThat(done.state()).isEqualTo(RecordInfo.State.COMPLETED);
        assertThat(done.fencingToken()).isEqualTo(token);
        assertThat(done.startedAt()).isEqualTo(acquiredAt);
        assertThat(done.deadline()).isEqualTo(clock.instant().plus(RETENTION));
        assertThat(done.status()).isEqualTo(201);
        assertThat(done.bodyBytes()).isEqualTo(14);
        clock.advance(RETENTION);
        assertThat(join(inspection.find(key)).orElseThrow().expired(clock.instant())).isTrue();

        assertThat(join(inspection.find(newKey()))).isEmpty();
    }

    @Test
    @DisplayName("O3: an omitted body is reported as such, and a released record no longer as in progress")
    void findOmittedAndReleased() {
        StoreInspection inspection = inspection();
        String omitted = newKey();
        long token = acquired(omitted, fingerprint("a"));
        assertThat(complete(omitted, token, new StoredResponse(200, Map.of(), new byte[0], true), RETENTION)).isTrue();
        assertThat(join(inspection.find(omitted)).orElseThrow().bodyBytes()).isEqualTo(-1);

        String released = newKey();
        long held = acquired(released, fingerprint("a"));
        assertThat(release(released, held)).isTrue();
        // gone, or a tombstone (Redis keeps one for expiry-grace): either way no longer in progress
        join(inspection.find(released)).ifPresent(r -> assertThat(r.state()).isEqualTo(RecordInfo.State.RELEASED));
    }

    @Test
    @DisplayName("O3: in-progress records acquired before a time are listed oldest first, up to the limit")
    void listsOldInProgressRecords() {
        StoreInspection inspection = inspection();
        String oldest = newKey();
        acquired(oldest, fingerprint("a"));
        clock.advance(Duration.ofSeconds(1));
        String older = newKey();
        acquired(older, fingerprint("a"));
        String completed = newKey();
        long token = acquired(completed, fingerprint("a"));
        assertThat(complete(completed, token, response(200, "{}"), RETENTION)).isTrue();
        clock.advance(Duration.ofMinutes(10));
        Instant cutoff = clock.instant();
        clock.advance(Duration.ofSeconds(1));
        String young = newKey();
        acquired(young, fingerprint("a"));

        List<String> listed = join(inspection.inProgressStartedBefore(cutoff, 1000)).stream()
            .map(RecordInfo::storeKey).toList();
        assertThat(listed).contains(oldest, older).doesNotContain(completed, young);
        assertThat(listed.indexOf(oldest)).isLessThan(listed.indexOf(older));
        assertThat(join(inspection.inProgressStartedBefore(cutoff, 1))).hasSize(1);
    }

    @Test
    @DisplayName("O3: counts go up by the records written, by state, and the store reports its size")
    void countsByState() {
        StoreInspection inspection = inspection();
        RecordCounts before = join(inspection.counts());
        acquired(newKey(), fingerprint("a"));
        String done = newKey();
        long token = acquired(done, fingerprint("a"));
        assertThat(complete(done, token, response(200, "{}"), RETENTION)).isTrue();
        RecordCounts after = join(inspection.counts());
        assertThat(after.complete()).isTrue();
        assertThat(after.inProgress() - before.inProgress()).isEqualTo(1);
        assertThat(after.completed() - before.completed()).isEqualTo(1);
        assertThat(after.total() - before.total()).isEqualTo(2);
        assertThat(after.size()).isNotEmpty();
    }

    /** Runs {@code n} acquires of one key and fingerprint at once, released together by a latch. */
    private List<AcquireResult> race(int n, String key, byte[] fp) throws Exception {
        ExecutorService pool = Executors.newFixedThreadPool(n);
        try {
            CountDownLatch start = new CountDownLatch(1);
            List<Future<AcquireResult>> futures = new ArrayList<>();
            for (int i = 0; i < n; i++) {
                futures.add(pool.submit(() -> {
                    start.await();
                    return IdempotencyStoreContractTest.this.acquire(key, fp, LEASE);
                }));
            }
            start.countDown();
            List<AcquireResult> results = new ArrayList<>();
            for (Future<AcquireResult> f : futures) {
                results.add(f.get(30, TimeUnit.SECONDS));
            }
            return results;
        } finally {
            pool.shutdownNow();
        }
    }

    @Test
    @DisplayName("S10/S17: N threads racing for one key: exactly one acquires, the rest see it in progress")
    void racingThreadsAcquireExactlyOnce() throws Exception {
        int n = racingThreads();
        List<AcquireResult> results = race(n, newKey(), fingerprint("race"));
        assertThat(results).filteredOn(r -> r instanceof AcquireResult.Acquired).hasSize(1);
        assertThat(results).filteredOn(r -> r instanceof AcquireResult.InProgress).hasSize(n - 1);
    }

    @Test
    @DisplayName("S12/S17: N threads racing to take over one expired lease: exactly one wins")
    void racingTakeoverExactlyOnce() throws Exception {
        String key = newKey();
        byte[] fp = fingerprint("race");
        long first = acquired(key, fp);
        clock.advance(LEASE.plusSeconds(1));
        List<AcquireResult> results = race(racingThreads(), key, fp);
        assertThat(results).filteredOn(r -> r instanceof AcquireResult.Acquired).singleElement()
            .satisfies(r -> {
                assertThat(((AcquireResult.Acquired) r).takeover()).isTrue();
                assertThat(((AcquireResult.Acquired) r).fencingToken()).isGreaterThan(first);
            });
        assertThat(results).filteredOn(r -> r instanceof AcquireResult.InProgress).hasSize(racingThreads() - 1);
    }

    // ---- durable steps (CONTRACT S23) ----

    private static final Duration KEEP = RETENTION.plus(LEASE);

    /** {@link IdempotencyStore#recordStep}, waited for. */
    protected boolean recordStep(String key, long token, String step, byte[] result) {
        return join(store.recordStep(key, token, step, result, KEEP));
    }

    /** {@link IdempotencyStore#steps}, waited for, as strings of their bytes. */
    protected Map<String, byte[]> steps(String key) {
        return join(store.steps(key));
    }

    private static byte[] bytes(String s) {
        return s.getBytes(StandardCharsets.UTF_8);
    }

    @Test
    @DisplayName("S23: a step recorded by the holder is found, byte for byte, with every other step of the record")
    void stepsRecordedAndFound() {
        String key = newKey();
        long token = acquired(key, fingerprint("a"));
        assertThat(steps(key)).isEmpty();
        byte[] binary = new byte[64 * 1024];
        for (int i = 0; i < binary.length; i++) {
            binary[i] = (byte) (i * 31);
        }
        assertThat(recordStep(key, token, "reserve-stock", bytes("{\"reservation\":\"r-1\"}"))).isTrue();
        assertThat(recordStep(key, token, "charge-card", binary)).isTrue();
        assertThat(recordStep(key, token, "empty", new byte[0])).isTrue();
        Map<String, byte[]> found = steps(key);
        assertThat(found).containsOnlyKeys("reserve-stock", "charge-card", "empty");
        assertThat(found.get("reserve-stock")).isEqualTo(bytes("{\"reservation\":\"r-1\"}"));
        assertThat(found.get("charge-card")).isEqualTo(binary);
        assertThat(found.get("empty")).isEmpty();
        assertThat(steps(newKey())).isEmpty();
    }

    @Test
    @DisplayName("S23: steps survive a release, so the next execution resumes; it records its own beside them")
    void stepsSurviveRelease() {
        String key = newKey();
        long first = acquired(key, fingerprint("a"));
        recordStep(key, first, "charge", bytes("ch_1"));
        assertThat(release(key, first)).isTrue();

        long second = acquired(key, fingerprint("a"));
        assertThat(steps(key)).containsOnlyKeys("charge");
        assertThat(recordStep(key, second, "ship", bytes("sh_1"))).isTrue();
        assertThat(steps(key)).containsOnlyKeys("charge", "ship");
        assertThat(complete(key, second, response(201, "{}"), RETENTION)).isTrue();
    }

    @Test
    @DisplayName("S23: a step written by a holder that lost its lease to a takeover is refused; the new holder's is kept")
    void stepsAreFenced() {
        String key = newKey();
        long first = acquired(key, fingerprint("a"));
        recordStep(key, first, "reserve", bytes("r-1"));
        clock.advance(LEASE.plusSeconds(1));
        AcquireResult taken = acquire(key, fingerprint("a"), LEASE);
        assertThat(taken).isInstanceOf(AcquireResult.Acquired.class);
        long second = ((AcquireResult.Acquired) taken).fencingToken();

        assertThat(recordStep(key, first, "charge", bytes("stale"))).isFalse();
        assertThat(steps(key)).containsOnlyKeys("reserve");
        assertThat(recordStep(key, second, "charge", bytes("ch_2"))).isTrue();
        assertThat(steps(key).get("charge")).isEqualTo(bytes("ch_2"));
    }

    @Test
    @DisplayName("S23: no step is recorded without a live holder: an absent key, a released or a completed record")
    void stepsNeedTheHolder() {
        assertThat(recordStep(newKey(), 1, "x", bytes("1"))).isFalse();
        String released = newKey();
        long token = acquired(released, fingerprint("a"));
        release(released, token);
        assertThat(recordStep(released, token, "x", bytes("1"))).isFalse();
        String completed = newKey();
        long held = acquired(completed, fingerprint("a"));
        complete(completed, held, response(200, "ok"), RETENTION);
        assertThat(recordStep(completed, held, "x", bytes("1"))).isFalse();
        assertThat(steps(released)).isEmpty();
        assertThat(steps(completed)).isEmpty();
    }

    @Test
    @DisplayName("S23: a step is written once: a second result for the same name leaves the first")
    void firstStepResultWins() {
        String key = newKey();
        long token = acquired(key, fingerprint("a"));
        assertThat(recordStep(key, token, "charge", bytes("first"))).isTrue();
        assertThat(recordStep(key, token, "charge", bytes("second"))).isTrue();
        assertThat(steps(key).get("charge")).isEqualTo(bytes("first"));
    }

    @Test
    @DisplayName("S23: steps expire: past their keep they are gone, as the record is")
    void stepsExpire() {
        String key = newKey();
        long token = acquired(key, fingerprint("a"));
        assertThat(join(store.recordStep(key, token, "short", bytes("1"), Duration.ofMinutes(5)))).isTrue();
        clock.advance(Duration.ofMinutes(4));
        assertThat(steps(key)).containsOnlyKeys("short");
        clock.advance(Duration.ofMinutes(2));
        assertThat(steps(key)).isEmpty();
    }

    @Test
    @DisplayName("S23: discarding steps is fenced, and leaves the record in progress")
    void discardSteps() {
        String key = newKey();
        long first = acquired(key, fingerprint("a"));
        recordStep(key, first, "charge", bytes("ch_1"));
        assertThat(join(store.discardSteps(key, first + 1))).isFalse();
        assertThat(steps(key)).containsOnlyKeys("charge");
        assertThat(join(store.discardSteps(key, first))).isTrue();
        assertThat(steps(key)).isEmpty();
        assertThat(acquire(key, fingerprint("a"), LEASE)).isInstanceOf(AcquireResult.InProgress.class);
        assertThat(recordStep(key, first, "charge", bytes("ch_2"))).isTrue();
        assertThat(complete(key, first, response(201, "{}"), RETENTION)).isTrue();
    }
}
