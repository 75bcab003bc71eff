package dev.idempotency.store.tck;

import dev.idempotency.server.store.RecordInfo;
import dev.idempotency.server.store.StoreInspection;
import org.junit.jupiter.api.DisplayName;
import org.junit.jupiter.api.Test;

import java.net.http.HttpResponse;
import java.time.Instant;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * The in-memory store's part of {@link RollingRestartSuite} (it is not shared, so there is no
 * second instance to ask): a request running when its instance shuts down gracefully finishes,
 * its lease renewed past its first end during the drain, and its result is in the store before
 * the instance goes.
 */
class InMemoryGracefulShutdownTest {

    @Test
    @DisplayName("S12: a request running when the instance shuts down gracefully keeps its lease and its result is stored")
    void drainFinishesTheRequest() throws Exception {
        RollingRestartSuite.Instance stopping = RollingRestartSuite.startInstance(Map.of(), "a", true);
        try {
            StoreInspection store = stopping.store(); // the store object outlives its context
            CompletableFuture<HttpResponse<byte[]>> original =
                RollingRestartSuite.startHeld(stopping, "/rr/orders", RollingRestartSuite.key());
            String recordId = stopping.api().lastRecord;
            Instant firstDeadline = RollingRestartSuite.record(store, recordId).orElseThrow().deadline();
            CompletableFuture<Void> stopped = RollingRestartSuite.beginShutdown(stopping);
            RollingRestartSuite.awaitRenewedPast(store, recordId, firstDeadline);
            assertThat(stopped).as("the shutdown waits for the request").isNotDone();

            stopping.api().gate.countDown();
            HttpResponse<byte[]> done = original.get(10, TimeUnit.SECONDS);
            assertThat(done.statusCode()).isEqualTo(200);
            stopped.get(30, TimeUnit.SECONDS);

            assertThat(RollingRestartSuite.executions(done)).isEqualTo(1);
            assertThat(RollingRestartSuite.record(store, recordId)).hasValueSatisfying(r ->
                assertThat(r.state()).as("stored, not left in progress").isEqualTo(RecordInfo.State.COMPLETED));
        } finally {
            stopping.api().gate.countDown();
            stopping.server().getApplicationContext().close();
        }
    }
}
