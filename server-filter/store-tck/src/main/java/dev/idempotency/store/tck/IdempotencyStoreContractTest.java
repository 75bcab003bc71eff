package dev.idempotency.store.tck;

import dev.idempotency.testsupport.MutableClock;
import dev.idempotency.server.store.AcquireResult;
import dev.idempotency.server.store.IdempotencyStore;
import dev.idempotency.server.store.StoreInspection;
import dev.idempotency.server.store.StoredResponse;
import org.junit.jupiter.api.DisplayName;
import org.junit.jupiter.api.Test;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

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
public abstract class IdempotencyStoreContractTest extends InspectionAndStepsContract {

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
    @DisplayName("O4: the executing run's traceparent is kept with the record, with or without a reason phrase, for a replay's link")
    void traceparentRoundTrips() {
        String trace = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01";
        StoredResponse plain = response(201, "made").withTraceparent(trace);
        StoredResponse withReason = new StoredResponse(200, Map.of("Content-Type", List.of("text/plain")),
            "ok".getBytes(StandardCharsets.UTF_8), false, "Fine Thanks", trace);
        for (StoredResponse stored : List.of(plain, withReason, plain.withoutBody())) {
            String key = newKey();
            complete(key, acquired(key, fingerprint("a")), stored, RETENTION);
            AcquireResult.Replay replay = (AcquireResult.Replay) acquire(key, fingerprint("a"), LEASE);
            assertThat(replay.response()).isEqualTo(stored);
            assertThat(replay.response().traceparent()).isEqualTo(trace);
        }
    }

    @Test
    @DisplayName("O4: the holder's traceparent is kept with its in-progress record, for a 409's link; a takeover"
        + " replaces it, a completion drops it")
    void inProgressKeepsTraceparent() throws Exception {
        String first = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01";
        String second = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-00";
        String key = newKey();
        assertThat(join(store.acquire(key, fingerprint("a"), LEASE, first))).isInstanceOf(AcquireResult.Acquired.class);
        assertThat(((AcquireResult.InProgress) acquire(key, fingerprint("a"), LEASE)).traceparent()).isEqualTo(first);
        assertThat(acquire(key, fingerprint("b"), LEASE)).isInstanceOf(AcquireResult.Mismatch.class);

        clock.advance(LEASE.plusSeconds(1)); // the lease ends: the takeover's trace replaces the first
        AcquireResult.Acquired takeover = (AcquireResult.Acquired) join(store.acquire(key, fingerprint("a"), LEASE, second));
        assertThat(takeover.takeover()).isTrue();
        assertThat(renew(key, takeover.fencingToken(), LEASE)).isTrue();
        assertThat(((AcquireResult.InProgress) join(store.acquire(key, fingerprint("a"), LEASE, first))).traceparent())
            .isEqualTo(second);
        complete(key, takeover.fencingToken(), response(201, "made"), RETENTION);
        assertThat(((AcquireResult.Replay) acquire(key, fingerprint("a"), LEASE)).response().traceparent()).isNull();

        String untraced = newKey();
        acquired(untraced, fingerprint("a"));
        assertThat(((AcquireResult.InProgress) acquire(untraced, fingerprint("a"), LEASE)).traceparent()).isNull();
        assertThatThrownBy(() -> store.acquire(newKey(), fingerprint("a"), LEASE, "00-not-a-trace"))
            .isInstanceOf(IllegalArgumentException.class);

        // many at once, as a store that batches its calls sends them: each record keeps its own
        int n = 16;
        List<String> keys = new ArrayList<>();
        List<String> traces = new ArrayList<>();
        for (int i = 0; i < n; i++) {
            keys.add(newKey());
            traces.add(String.format("00-%032x-%016x-01", i + 1, i + 1));
        }
        ExecutorService pool = Executors.newFixedThreadPool(n);
        try {
            List<Future<AcquireResult>> created = new ArrayList<>();
            for (int i = 0; i < n; i++) {
                int at = i;
                created.add(pool.submit(() -> join(store.acquire(keys.get(at), fingerprint("a"), LEASE, traces.get(at)))));
            }
            for (Future<AcquireResult> f : created) {
                assertThat(f.get(30, TimeUnit.SECONDS)).isInstanceOf(AcquireResult.Acquired.class);
            }
            List<Future<AcquireResult>> met = new ArrayList<>();
            for (int i = 0; i < n; i++) {
                int at = i;
                met.add(pool.submit(() -> acquire(keys.get(at), fingerprint("a"), LEASE)));
            }
            for (int i = 0; i < n; i++) {
                assertThat(((AcquireResult.InProgress) met.get(i).get(30, TimeUnit.SECONDS)).traceparent())
                    .isEqualTo(traces.get(i));
            }
        } finally {
            pool.shutdownNow();
        }
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
}
