package dev.idempotency.server.internal.runtime;

import dev.idempotency.server.internal.telemetry.RecordedMetrics;
import dev.idempotency.server.store.IdempotencyStoreException;
import org.junit.jupiter.api.DisplayName;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

import java.time.Duration;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

class StoreCallsTest {

    @ParameterizedTest(name = "metrics recording latencies: {0}")
    @ValueSource(booleans = {true, false})
    @DisplayName("S22: store calls are timed when the metrics record latencies, and only then; failures become store failures either way")
    void timedOnlyWhenRecorded(boolean wanted) {
        RecordedMetrics metrics = new RecordedMetrics(wanted);
        StoreCalls calls = new StoreCalls(metrics, new StoreCircuit(0, Duration.ofSeconds(1), System::nanoTime, metrics), null);

        assertThat(calls.timed("acquire", () -> CompletableFuture.completedFuture("at once")).join()).isEqualTo("at once");
        CompletableFuture<String> later = new CompletableFuture<>();
        CompletableFuture<String> answered = calls.timed("complete", () -> later);
        later.complete("later");
        assertThat(answered.join()).isEqualTo("later");
        assertThatThrownBy(() -> calls.timed("release", () -> CompletableFuture.<String>failedFuture(
                new IllegalStateException("broken store"))).join())
            .isInstanceOf(CompletionException.class).hasCauseInstanceOf(IdempotencyStoreException.class)
            .hasMessageContaining("idempotency store release failed").hasMessageContaining("broken store");

        assertThat(metrics.latencies).isEqualTo(wanted ? List.of("acquire/ok", "complete/ok", "release/error") : List.of());
    }
}
