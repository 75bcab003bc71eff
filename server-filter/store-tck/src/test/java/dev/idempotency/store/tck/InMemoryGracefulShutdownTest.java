package dev.idempotency.store.tck;

import dev.idempotency.server.store.IdempotencyStore;
import dev.idempotency.server.store.RecordInfo;
import dev.idempotency.server.store.StoreInspection;
import dev.idempotency.testsupport.Http;
import io.micronaut.runtime.server.EmbeddedServer;
import org.junit.jupiter.api.DisplayName;
import org.junit.jupiter.api.Test;

import java.net.http.HttpResponse;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * The in-memory store's part of {@link RollingRestartSuite} (it is not shared, so there is no
 * second instance to ask): a request running when its instance shuts down gracefully finishes,
 * its lease kept alive through the drain, and its result is in the store before the instance goes.
 */
class InMemoryGracefulShutdownTest {

    @Test
    @DisplayName("S12: a request running when the instance shuts down gracefully finishes and its result is stored")
    void drainFinishesTheRequest() throws Exception {
        EmbeddedServer stopping = RollingRestartSuite.start(Map.of(), "a", true);
        try {
            IdempotencyStore store = stopping.getApplicationContext().getBean(IdempotencyStore.class);
            String k = RollingRestartSuite.key();
            CompletableFuture<HttpResponse<byte[]>> original = RollingRestartSuite.startHeld(stopping, "/rr/orders", k);
            CompletableFuture<Void> stopped = RollingRestartSuite.beginShutdown(stopping);
            Thread.sleep(2_500); // two and a half leases into the drain
            assertThat(stopped).as("the shutdown waits for the request").isNotDone();

            stopping.getApplicationContext().getBean(RollingRestartApi.class).gate.countDown();
            HttpResponse<byte[]> done = original.get(10, TimeUnit.SECONDS);
            assertThat(done.statusCode()).isEqualTo(200);
            stopped.get(30, TimeUnit.SECONDS);

            assertThat(RollingRestartSuite.executions(done)).isEqualTo(1);
            RecordInfo record = ((StoreInspection) store).find(RollingRestartSuite.recordId(done)).toCompletableFuture()
                .get(10, TimeUnit.SECONDS).orElseThrow();
            assertThat(record.state()).as("stored, not left in progress").isEqualTo(RecordInfo.State.COMPLETED);
            assertThat(record.fencingToken()).isEqualTo(1);
        } finally {
            if (stopping.getApplicationContext().isRunning()) {
                stopping.getApplicationContext().getBean(RollingRestartApi.class).gate.countDown();
            }
            stopping.getApplicationContext().close();
        }
    }
}
