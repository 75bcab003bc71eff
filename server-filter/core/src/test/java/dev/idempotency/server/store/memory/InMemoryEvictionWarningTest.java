package dev.idempotency.server.store.memory;

import dev.idempotency.server.store.AcquireResult;
import dev.idempotency.server.store.StoredResponse;
import ch.qos.logback.classic.Level;
import dev.idempotency.testsupport.LogCapture;
import dev.idempotency.testsupport.MutableClock;
import org.junit.jupiter.api.DisplayName;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

import java.time.Duration;
import java.util.List;
import java.util.Map;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * CONTRACT S17, O: a full in-memory store evicts and says so at WARN, at most once a minute by
 * the store's clock, with how many records went since the last line.
 */
class InMemoryEvictionWarningTest {

    private final MutableClock clock = new MutableClock();
    private final InMemoryIdempotencyStore store = new InMemoryIdempotencyStore(clock, 2);
    @RegisterExtension
    final LogCapture log = LogCapture.of(InMemoryIdempotencyStore.class, Level.WARN);
    private int keys;

    private void completeOne() {
        String key = "key-" + keys++;
        AcquireResult r = store.acquire(key, new byte[] {1}, Duration.ofSeconds(30)).toCompletableFuture().join();
        long token = ((AcquireResult.Acquired) r).fencingToken();
        store.complete(key, token, new StoredResponse(201, Map.of(), new byte[] {'{', '}'}, false), Duration.ofHours(1))
            .toCompletableFuture().join();
    }

    private List<String> warnings() {
        return log.linesContaining("evicted");
    }

    @Test
    @DisplayName("S17/O: the first eviction is logged at once, the next ones once a minute of the store's clock, counted")
    void evictionsAreLoggedOnceAMinuteWithTheirCount() {
        completeOne();
        completeOne();
        assertThat(warnings()).isEmpty();

        completeOne(); // the third record evicts the first
        assertThat(warnings()).singleElement().asString().contains("evicted 1 earliest-completed records");

        for (int i = 0; i < 5; i++) {
            completeOne();
        }
        assertThat(warnings()).hasSize(1); // within the minute: counted, not logged

        clock.advance(Duration.ofSeconds(61));
        completeOne();
        assertThat(warnings()).hasSize(2).last().asString().contains("evicted 6 earliest-completed records");

        clock.advance(Duration.ofMinutes(-10)); // a clock set back does not silence the store for ten minutes
        completeOne();
        assertThat(warnings()).hasSize(3).last().asString().contains("evicted 1 earliest-completed records");
        assertThat(store.size()).isEqualTo(2);
    }
}
