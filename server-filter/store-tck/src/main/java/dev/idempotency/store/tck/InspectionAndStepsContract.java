package dev.idempotency.store.tck;

import dev.idempotency.server.store.AcquireResult;
import dev.idempotency.server.store.RecordCounts;
import dev.idempotency.server.store.RecordInfo;
import dev.idempotency.server.store.StoreInspection;
import dev.idempotency.server.store.StoredResponse;
import org.junit.jupiter.api.DisplayName;
import org.junit.jupiter.api.Test;
import java.time.Duration;
import java.time.Instant;
import java.util.List;
import java.util.Map;
import static org.assertj.core.api.Assertions.assertThat;

/**
 * The store contract's cases on what a store reports to an operator (CONTRACT O3, for a store that
 * implements {@link StoreInspection}) and on durable steps (CONTRACT S23). Extend
 * {@link IdempotencyStoreContractTest}, which runs them with the rest.
 */
public abstract class InspectionAndStepsContract extends StoreContractBase {

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
