package dev.idempotency.server.internal.engine;

import io.micronaut.core.propagation.PropagatedContext;
import dev.idempotency.server.InMemoryBackedStore;
import dev.idempotency.server.internal.telemetry.RecordedMetrics;
import dev.idempotency.server.store.AcquireResult;
import dev.idempotency.server.http.IdempotencyFilter;
import dev.idempotency.server.internal.runtime.IdempotencyScheduler;
import dev.idempotency.server.store.IdempotencyStoreException;
import dev.idempotency.server.store.memory.InMemoryIdempotencyStore;
import dev.idempotency.server.store.RecordCounts;
import dev.idempotency.server.store.RecordInfo;
import dev.idempotency.server.store.StoreInspection;
import dev.idempotency.server.store.StoredResponse;
import ch.qos.logback.classic.Level;
import dev.idempotency.testsupport.Await;
import dev.idempotency.testsupport.LogCapture;
import dev.idempotency.testsupport.MutableClock;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.DisplayName;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

import java.time.Duration;
import java.time.Instant;
import java.util.HexFormat;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.ThreadLocalRandom;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * A completion retried after a failed attempt (S12, S22) finds no in-progress record with its
 * token either because the lease was taken over meanwhile or because the failed attempt had in
 * fact stored the result and only its answer was lost. Only the first is a fenced completion.
 */
class CompletionRetryTest {

    /** The in-memory store, whose completions can be refused, or can write and then lose their answer. */
    private static final class FlakyStore extends InMemoryBackedStore implements StoreInspection {
        volatile boolean refuseWrites;
        volatile boolean findFails;
        /** Completions whose stage fails after the write, as after a timeout. */
        final AtomicInteger answersToLose = new AtomicInteger();
        /** Completions sent twice, answered with the second answer, as a reconnecting client resends one. */
        final AtomicInteger resends = new AtomicInteger();

        FlakyStore(InMemoryIdempotencyStore delegate) {
            super(delegate);
        }

        @Override
        public CompletionStage<Boolean> complete(String storeKey, long fencingToken, StoredResponse response,
                                                 Duration retention) {
            if (refuseWrites) {
                return CompletableFuture.failedFuture(new IdempotencyStoreException("connection refused (simulated)"));
            }
            CompletionStage<Boolean> written = delegate.complete(storeKey, fencingToken, response, retention);
            if (resends.getAndUpdate(n -> Math.max(0, n - 1)) > 0) {
                written = written.thenCompose(first -> delegate.complete(storeKey, fencingToken, response, retention));
            }
            if (answersToLose.getAndUpdate(n -> Math.max(0, n - 1)) > 0) {
                return written.thenCompose(stored -> CompletableFuture.failedFuture(
                    new IdempotencyStoreException("command timed out after it was written (simulated)")));
            }
            return written;
        }

        @Override
        public CompletionStage<RecordCounts> counts() {
            return delegate.counts();
        }

        @Override
        public CompletionStage<List<RecordInfo>> inProgressStartedBefore(Instant startedBefore, int limit) {
            return delegate.inProgressStartedBefore(startedBefore, limit);
        }

        @Override
        public CompletionStage<Optional<RecordInfo>> find(String storeKey) {
            if (findFails) {
                return CompletableFuture.failedFuture(new IdempotencyStoreException("connection reset (simulated)"));
            }
            return delegate.find(storeKey);
        }
    }

    private static final byte[] FINGERPRINT = {1, 2, 3};
    /** Long enough that no retry is given up while a test runs (half of it, on the real clock). */
    private static final Duration LEASE = Duration.ofSeconds(60);
    private static final Duration RETENTION = Duration.ofHours(1);
    private static final StoredResponse STORED = new StoredResponse(201, Map.of(), new byte[] {'{', '}'}, false);
    private static final StoredResponse NEWER = new StoredResponse(200, Map.of(), new byte[] {'[', ']'}, false);
    private static final Duration WAIT = Duration.ofSeconds(5);
    private static final String FENCED = "idempotency completion fenced";
    private static final String STORED_EARLIER = "idempotency completion of key=";

    private final MutableClock clock = new MutableClock(Instant.parse("2026-11-27T10:00:00Z"));
    private final FlakyStore store = new FlakyStore(new InMemoryIdempotencyStore(clock, 1000));
    private final RecordedMetrics metrics = new RecordedMetrics(false);
    private final IdempotencyScheduler scheduler = new IdempotencyScheduler();
    private final Settlement settlement = TestSettlements.on(store, scheduler, metrics);
    @RegisterExtension
    final LogCapture log = LogCapture.of(IdempotencyFilter.LOG_CATEGORY, Level.INFO);

    @AfterEach
    void stop() {
        settlement.close();
        scheduler.close();
    }

    private static String newStoreKey() {
        byte[] digest = new byte[32];
        ThreadLocalRandom.current().nextBytes(digest);
        return HexFormat.of().formatHex(digest);
    }

    private AcquireResult.Acquired acquire(String storeKey) throws Exception {
        AcquireResult result = store.acquire(storeKey, FINGERPRINT, LEASE).toCompletableFuture()
            .get(5, TimeUnit.SECONDS);
        assertThat(result).isInstanceOf(AcquireResult.Acquired.class);
        return (AcquireResult.Acquired) result;
    }

    private Lease lease(String key, long token) {
        return new Lease(new RecordKey(key), token, LEASE, PropagatedContext.empty());
    }

    private String fencedLine(String key, String why) {
        return FENCED + " key=" + key.substring(0, 12) + ": " + why;
    }

    /**
     * Waits for the fenced completion's WARN line, which is written after its count, and checks
     * that it was counted once.
     *
     * @return the line
     */
    private String fencedOnce() throws InterruptedException {
        Await.until("the fenced line", WAIT, () -> !log.lines(Level.WARN, FENCED).isEmpty());
        assertThat(metrics.fenced).hasValue(1);
        assertThat(log.lines(Level.INFO, STORED_EARLIER)).isEmpty();
        List<String> lines = log.lines(Level.WARN, FENCED);
        assertThat(lines).hasSize(1);
        return lines.get(0);
    }

    /** A refused completion of {@code key} that the record showed stored by this lease: INFO, not counted, replayed. */
    private void assertStoredByEarlierAttempt(String key) throws Exception {
        Await.until("the INFO line", WAIT, () -> !log.lines(Level.INFO, STORED_EARLIER).isEmpty());
        assertThat(log.lines(Level.INFO, STORED_EARLIER)).containsExactly(STORED_EARLIER + key.substring(0, 12)
            + " had been stored by an earlier attempt whose answer was lost");
        assertThat(log.lines(Level.WARN, FENCED)).isEmpty();
        assertThat(metrics.fenced).hasValue(0);
        assertThat(replayOf(key)).isEqualTo(new AcquireResult.Replay(STORED));
    }

    private AcquireResult replayOf(String key) throws Exception {
        return store.acquire(key, FINGERPRINT, LEASE).toCompletableFuture().get(5, TimeUnit.SECONDS);
    }

    /**
     * Acquires {@code key}, fails the completion's first attempt without writing, and lets the
     * lease run out on the store's clock, so {@code meanwhile} can act before the retry.
     */
    private void failFirstAttemptThenLetLeaseEnd(String key, long token, RunMeanwhile meanwhile) throws Exception {
        store.refuseWrites = true;
        settlement.complete(lease(key, token), STORED, RETENTION).get(5, TimeUnit.SECONDS);
        clock.advance(LEASE.plusSeconds(1));
        meanwhile.run();
        store.refuseWrites = false; // the next retry (100 ms, 200 ms after...) reaches the store
    }

    private interface RunMeanwhile {
        void run() throws Exception;
    }

    @Test
    @DisplayName("S12/S22: a result stored by an attempt whose answer was lost is recognised by the retry that"
        + " finds it: logged at INFO, not counted as fenced, and replayed")
    void lostAnswerIsNotATakeover() throws Exception {
        String key = newStoreKey();
        long token = acquire(key).fencingToken();
        store.answersToLose.set(1);

        settlement.complete(lease(key, token), STORED, RETENTION).get(5, TimeUnit.SECONDS);

        assertStoredByEarlierAttempt(key);
        assertThat(log.lines(Level.WARN, "idempotency completion failed")).as("the first attempt's failure").hasSize(1);
        assertThat(metrics.abandoned).hasValue(0);
    }

    @Test
    @DisplayName("S12/S22: a first attempt refused because a resent command had already stored it (a client that"
        + " reconnected) is not counted as fenced either")
    void resentCompletionIsNotATakeover() throws Exception {
        String key = newStoreKey();
        long token = acquire(key).fencingToken();
        store.resends.set(1);

        settlement.complete(lease(key, token), STORED, RETENTION).get(5, TimeUnit.SECONDS);

        assertStoredByEarlierAttempt(key);
        assertThat(log.lines(Level.WARN, "idempotency completion")).as("no attempt failed").isEmpty();
    }

    @Test
    @DisplayName("S12/S22: a retried completion whose lease was taken over meanwhile is counted as fenced and"
        + " logged; the newer holder's result stands")
    void takeoverDuringRetriesIsFenced() throws Exception {
        String key = newStoreKey();
        long token = acquire(key).fencingToken();
        AcquireResult.Acquired[] newer = new AcquireResult.Acquired[1];
        failFirstAttemptThenLetLeaseEnd(key, token, () -> newer[0] = acquire(key));
        assertThat(newer[0].takeover()).isTrue();

        assertThat(fencedOnce()).isEqualTo(fencedLine(key, "the lease was taken over by a later request, whose result"
            + " stands"));
        assertThat(metrics.abandoned).hasValue(0);
        assertThat(store.complete(key, newer[0].fencingToken(), NEWER, RETENTION).toCompletableFuture()
            .get(5, TimeUnit.SECONDS)).isTrue();
        assertThat(replayOf(key)).isEqualTo(new AcquireResult.Replay(NEWER));
    }

    @Test
    @DisplayName("S12/S22: a retry that finds the record completed by a later holder (another token) is fenced,"
        + " not taken for its own lost answer")
    void laterHolderCompletedFirstIsFenced() throws Exception {
        String key = newStoreKey();
        long token = acquire(key).fencingToken();
        failFirstAttemptThenLetLeaseEnd(key, token, () -> {
            long newer = acquire(key).fencingToken();
            assertThat(store.delegate.complete(key, newer, NEWER, RETENTION).toCompletableFuture()
                .get(5, TimeUnit.SECONDS)).isTrue();
        });

        assertThat(fencedOnce()).isEqualTo(fencedLine(key, "the lease was taken over by a later request, whose result"
            + " stands"));
        assertThat(replayOf(key)).isEqualTo(new AcquireResult.Replay(NEWER));
    }

    @Test
    @DisplayName("S12/S22: a retry that finds no record (its expired lease purged) is fenced and says the record"
        + " is gone")
    void goneRecordIsFencedAndSaysSo() throws Exception {
        String key = newStoreKey();
        long token = acquire(key).fencingToken();
        failFirstAttemptThenLetLeaseEnd(key, token, () -> assertThat(store.delegate.purgeExpired()).isEqualTo(1));

        assertThat(fencedOnce()).isEqualTo(fencedLine(key,
            "the record is gone (released, purged or expired), so a retry runs the operation again"));
    }

    @Test
    @DisplayName("S12/S22: when the record cannot be read, the refusal is counted as fenced and the line says why"
        + " it could not tell")
    void unreadableRecordIsFenced() throws Exception {
        String key = newStoreKey();
        long token = acquire(key).fencingToken();
        failFirstAttemptThenLetLeaseEnd(key, token, () -> {
            acquire(key); // taken over, but the record cannot be read to show it
            store.findFails = true;
        });

        assertThat(fencedOnce())
            .startsWith(fencedLine(key, "the lease no longer matches, and the record could not be read to tell why ("))
            .contains("connection reset (simulated)");
    }
}
