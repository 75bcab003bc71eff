package dev.idempotency.server.internal.engine;

import io.micronaut.core.propagation.PropagatedContext;
import dev.idempotency.server.store.AcquireResult;
import dev.idempotency.server.internal.runtime.IdempotencyScheduler;
import dev.idempotency.server.store.memory.InMemoryIdempotencyStore;
import dev.idempotency.server.internal.telemetry.NoopIdempotencyMetrics;
import dev.idempotency.server.store.RecordInfo;
import dev.idempotency.server.internal.runtime.RequestLoop;
import dev.idempotency.server.internal.runtime.StoreCalls;
import dev.idempotency.server.internal.runtime.StoreCircuit;
import io.netty.channel.DefaultEventLoop;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.DisplayName;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

import java.time.Clock;
import java.time.Duration;
import java.time.Instant;
import java.util.concurrent.TimeUnit;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * The lease keeper on an event loop (S12): a request that ends early never joins the kept
 * leases; one that runs on does, and its lease is renewed; closing from any thread stops it.
 * Real time, leases of a few hundred milliseconds; outcomes, not timings, are asserted.
 */
class LeaseKeeperTest {

    private static final String KEY = "0123456789abcdef".repeat(4);

    private DefaultEventLoop eventLoop;
    private IdempotencyScheduler scheduler;
    private InMemoryIdempotencyStore store;
    private LeaseKeeper keeper;

    @BeforeEach
    void start() {
        eventLoop = new DefaultEventLoop();
        scheduler = new IdempotencyScheduler();
        store = new InMemoryIdempotencyStore(Clock.systemUTC(), 100);
        NoopIdempotencyMetrics metrics = new NoopIdempotencyMetrics();
        StoreCalls calls = new StoreCalls(metrics, new StoreCircuit(0, Duration.ofSeconds(1), System::nanoTime, metrics), null);
        keeper = new LeaseKeeper(store, scheduler, calls, metrics);
    }

    @AfterEach
    void stop() {
        scheduler.close();
        eventLoop.shutdownGracefully(0, 1, TimeUnit.SECONDS);
    }

    private Lease acquire(Duration duration) {
        AcquireResult result = store.acquire(KEY, new byte[] {1}, duration).toCompletableFuture().join();
        return new Lease(new RecordKey(KEY), ((AcquireResult.Acquired) result).fencingToken(), duration, PropagatedContext.empty());
    }

    private Instant deadline() {
        return store.find(KEY).toCompletableFuture().join().map(RecordInfo::deadline).orElseThrow();
    }

    private LeaseKeeper.Keeping keepOnLoop(Lease lease) throws Exception {
        return eventLoop.submit(() -> keeper.keep(lease, RequestLoop.current())).get(5, TimeUnit.SECONDS);
    }

    @ParameterizedTest(name = "S12: a request that ends before halfway to its first renewal is never kept nor"
        + " renewed (closed on its loop: {0})")
    @ValueSource(booleans = {true, false})
    void shortRequestsAreNeverKept(boolean closedOnTheLoop) throws Exception {
        Lease lease = acquire(Duration.ofMillis(600)); // first renewal after 200 ms, kept from 100 ms
        Instant deadline = deadline();
        LeaseKeeper.Keeping keeping = keepOnLoop(lease);
        assertThat(keeper.size()).isZero();
        if (closedOnTheLoop) {
            eventLoop.submit(keeping::close).get(5, TimeUnit.SECONDS);
        } else {
            keeping.close(); // from another thread while the loop's timer is pending
        }
        Thread.sleep(400);
        assertThat(keeper.size()).isZero();
        assertThat(deadline()).isEqualTo(deadline);
    }

    @Test
    @DisplayName("S12: a request still running is kept and its lease renewed past its length, until closed")
    void longRequestsAreRenewed() throws Exception {
        Lease lease = acquire(Duration.ofMillis(600));
        Instant first = deadline();
        LeaseKeeper.Keeping keeping = keepOnLoop(lease);
        Thread.sleep(1_000); // past the lease: only renewals keep the record held
        assertThat(keeper.size()).isEqualTo(1);
        assertThat(deadline()).isAfter(first);
        assertThat(store.acquire(KEY, new byte[] {1}, Duration.ofMillis(600)).toCompletableFuture().join())
            .isInstanceOf(AcquireResult.InProgress.class);
        keeping.close(); // from this thread, not the loop
        assertThat(keeper.size()).isZero();
    }

    @Test
    @DisplayName("S12: off an event loop a lease is kept at once")
    void offTheLoopAtOnce() {
        LeaseKeeper.Keeping keeping = keeper.keep(acquire(Duration.ofSeconds(30)), RequestLoop.current());
        assertThat(keeper.size()).isEqualTo(1);
        keeping.close();
        assertThat(keeper.size()).isZero();
    }
}
