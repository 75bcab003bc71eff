package dev.idempotency.server.internal.runtime;

import dev.idempotency.server.store.IdempotencyStoreException;
import dev.idempotency.server.internal.telemetry.NoopIdempotencyMetrics;
import org.junit.jupiter.api.DisplayName;
import org.junit.jupiter.api.Test;

import java.time.Duration;
import java.util.concurrent.atomic.AtomicLong;

import static org.assertj.core.api.Assertions.assertThat;

/** S19: the store circuit's states, on a hand-moved time source (nothing sleeps). */
class StoreCircuitTest {

    private final AtomicLong now = new AtomicLong(1_000_000_000L);
    private final StoreCircuit circuit = new StoreCircuit(3, Duration.ofMillis(500), now::get, new NoopIdempotencyMetrics());
    private static final IdempotencyStoreException DOWN = new IdempotencyStoreException("connection refused");

    private void advanceMillis(long ms) {
        now.addAndGet(ms * 1_000_000);
    }

    @Test
    @DisplayName("S19: closed until three calls in a row fail; a success in between resets the count")
    void opensAfterFailuresInARow() {
        circuit.failed(DOWN);
        circuit.failed(DOWN);
        circuit.succeeded();
        circuit.failed(DOWN);
        circuit.failed(DOWN);
        assertThat(circuit.state()).isEqualTo(StoreCircuit.State.CLOSED);
        assertThat(circuit.admit()).isTrue();
        circuit.failed(DOWN);
        assertThat(circuit.state()).isEqualTo(StoreCircuit.State.OPEN);
        assertThat(circuit.admit()).isFalse();
        assertThat(circuit.untilNextProbe()).isEqualTo(Duration.ofMillis(500));
    }

    @Test
    @DisplayName("S19: open: one probe per interval goes through; its failure keeps it open, its success closes it")
    void probes() {
        for (int i = 0; i < 3; i++) {
            circuit.failed(DOWN);
        }
        advanceMillis(499);
        assertThat(circuit.admit()).isFalse();
        advanceMillis(1);
        assertThat(circuit.admit()).as("the probe").isTrue();
        assertThat(circuit.state()).isEqualTo(StoreCircuit.State.PROBING);
        assertThat(circuit.admit()).as("only one probe at a time").isFalse();
        circuit.failed(DOWN);
        assertThat(circuit.state()).isEqualTo(StoreCircuit.State.OPEN);
        assertThat(circuit.admit()).as("the next probe waits its interval").isFalse();
        advanceMillis(500);
        assertThat(circuit.admit()).isTrue();
        circuit.succeeded();
        assertThat(circuit.state()).isEqualTo(StoreCircuit.State.CLOSED);
        assertThat(circuit.untilNextProbe()).isNull();
        for (int i = 0; i < 10; i++) {
            assertThat(circuit.admit()).isTrue();
        }
    }

    @Test
    @DisplayName("S19: a completion that succeeds while open (a request that was already running) closes it too")
    void anySuccessCloses() {
        for (int i = 0; i < 3; i++) {
            circuit.failed(DOWN);
        }
        circuit.succeeded();
        assertThat(circuit.state()).isEqualTo(StoreCircuit.State.CLOSED);
    }

    @Test
    @DisplayName("S19: a threshold of 0 (and the in-memory store) never opens")
    void disabled() {
        StoreCircuit off = new StoreCircuit(0, Duration.ofMillis(500), now::get, new NoopIdempotencyMetrics());
        for (int i = 0; i < 100; i++) {
            off.failed(DOWN);
        }
        assertThat(off.state()).isEqualTo(StoreCircuit.State.CLOSED);
        assertThat(off.admit()).isTrue();
    }
}
