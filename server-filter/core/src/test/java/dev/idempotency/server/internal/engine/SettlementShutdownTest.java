package dev.idempotency.server.internal.engine;

import io.micronaut.core.propagation.PropagatedContext;
import dev.idempotency.server.internal.telemetry.RecordedMetrics;
import dev.idempotency.server.store.AcquireResult;
import dev.idempotency.server.http.IdempotencyFilter;
import dev.idempotency.server.internal.runtime.IdempotencyScheduler;
import dev.idempotency.server.store.IdempotencyStore;
import dev.idempotency.server.store.IdempotencyStoreException;
import dev.idempotency.server.store.StoredResponse;
import ch.qos.logback.classic.Level;
import dev.idempotency.testsupport.LogCapture;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.DisplayName;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * Completion retries still pending when the application stops (S12, S22): each is given up once,
 * counted as abandoned and logged at ERROR, and never tried after; whichever of the settlement and
 * the scheduler stops first. The retries given up after half the lease are
 * {@code StoreOutageTest}'s.
 */
class SettlementShutdownTest {

    /** A store whose completions always fail, as one that is unreachable. */
    private static final class DownStore implements IdempotencyStore {
        final AtomicInteger completions = new AtomicInteger();

        @Override
        public CompletionStage<AcquireResult> acquire(String storeKey, byte[] fingerprint, Duration lease) {
            throw new UnsupportedOperationException("not called by settlement");
        }

        @Override
        public CompletionStage<Boolean> complete(String storeKey, long fencingToken, StoredResponse response,
                                                 Duration retention) {
            completions.incrementAndGet();
            return CompletableFuture.failedFuture(new IdempotencyStoreException("connection refused (simulated)"));
        }

        @Override
        public CompletionStage<Boolean> release(String storeKey, long fencingToken) {
            throw new UnsupportedOperationException("not called here");
        }

        @Override
        public CompletionStage<Boolean> renew(String storeKey, long fencingToken, Duration lease) {
            throw new UnsupportedOperationException("not called here");
        }
    }

    private static final StoredResponse STORED = new StoredResponse(201, Map.of(), new byte[] {'{', '}'}, false);
    /** Long enough that no retry is given up for the lease while a test runs. */
    private static final Duration LEASE = Duration.ofSeconds(60);

    private final DownStore store = new DownStore();
    private final RecordedMetrics metrics = new RecordedMetrics(false);
    private final IdempotencyScheduler scheduler = new IdempotencyScheduler();
    private final Settlement settlement = TestSettlements.on(store, scheduler, metrics);
    @RegisterExtension
    final LogCapture log = LogCapture.of(IdempotencyFilter.LOG_CATEGORY, Level.ERROR);

    @AfterEach
    void stopScheduler() {
        scheduler.close();
    }

    private static Lease lease(String key) {
        return new Lease(new RecordKey(key), 7, LEASE, PropagatedContext.empty());
    }

    private List<String> errors() {
        return log.lines(Level.ERROR);
    }

    @Test
    @DisplayName("S12/S22: retries pending when the settlement stops are each given up once, counted and logged,"
        + " and never tried after, though the scheduler still runs")
    void pendingRetriesGivenUpWhenTheSettlementStops() throws Exception {
        settlement.complete(lease("a".repeat(64)), STORED, Duration.ofHours(1)).get(5, TimeUnit.SECONDS);
        settlement.complete(lease("b".repeat(64)), STORED, Duration.ofHours(1)).get(5, TimeUnit.SECONDS);
        assertThat(store.completions).as("each tried once before the response").hasValue(2);
        assertThat(metrics.abandoned).hasValue(0);

        settlement.close();

        assertThat(metrics.abandoned).hasValue(2);
        assertThat(errors()).hasSize(2).allMatch(line -> line.matches("idempotency completion failed key=[0-9a-f]{12}:"
            + " the result could not be stored \\(the response went out regardless, unless the caller's connection"
            + " had closed\\), and the application is stopping, so it is not tried again; the key stays locked until"
            + " its lease expires \\(it may have already, if its renewals failed too\\), then a retry runs the handler"
            + " again"));
        Thread.sleep(400); // past the first retry's 100 ms, with the scheduler still running
        assertThat(store.completions).as("no retry ran after the settlement stopped").hasValue(2);
        settlement.close();
        assertThat(metrics.abandoned).as("a second close finds nothing pending").hasValue(2);
    }

    @Test
    @DisplayName("S12/S22: when the scheduler stops first, the retries it will never run are given up by the"
        + " settlement's own stop, once")
    void pendingRetriesGivenUpWhenTheSchedulerStopsFirst() throws Exception {
        settlement.complete(lease("c".repeat(64)), STORED, Duration.ofHours(1)).get(5, TimeUnit.SECONDS);
        scheduler.close();
        Thread.sleep(300);
        assertThat(store.completions).as("the stopped scheduler ran no retry").hasValue(1);
        assertThat(metrics.abandoned).hasValue(0);

        settlement.close();

        assertThat(metrics.abandoned).hasValue(1);
        assertThat(errors()).singleElement().asString().contains("the application is stopping");
    }

    @Test
    @DisplayName("S12/S22: a completion that fails once the scheduler has stopped is given up at once, once")
    void completionFailingAfterTheSchedulerStopped() throws Exception {
        scheduler.close();
        settlement.complete(lease("d".repeat(64)), STORED, Duration.ofHours(1)).get(5, TimeUnit.SECONDS);

        assertThat(metrics.abandoned).hasValue(1);
        assertThat(errors()).singleElement().asString().contains("the application is stopping");
        settlement.close();
        assertThat(metrics.abandoned).hasValue(1);
        assertThat(errors()).hasSize(1);
    }

    @Test
    @DisplayName("S12/S22: a completion that fails after the settlement stopped is given up at once, not left to"
        + " a scheduler that may stop before it is due")
    void completionFailingAfterTheSettlementStopped() throws Exception {
        settlement.close();
        settlement.complete(lease("e".repeat(64)), STORED, Duration.ofHours(1)).get(5, TimeUnit.SECONDS);

        assertThat(metrics.abandoned).hasValue(1);
        assertThat(errors()).singleElement().asString().contains("the application is stopping");
        Thread.sleep(300);
        assertThat(store.completions).hasValue(1);
    }
}
