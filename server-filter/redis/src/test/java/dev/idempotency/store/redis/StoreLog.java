package dev.idempotency.store.redis;

import ch.qos.logback.classic.Level;
import dev.idempotency.testsupport.LogCapture;

import java.util.List;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * The Redis store's log at INFO while open (the tests' root level is WARN), kept for a test to
 * read; closing restores the level and stops keeping.
 */
final class StoreLog implements AutoCloseable {

    private final LogCapture log = LogCapture.of(RedisIdempotencyStore.class, Level.INFO).start();

    /** @return the once-only line saying that loops of another transport share one connection (exactly one) */
    String otherTransportLine() {
        List<String> lines = log.linesContaining("do not run the transport Lettuce uses");
        assertThat(lines).as("the store's line about loops of another transport").hasSize(1);
        return lines.get(0);
    }

    @Override
    public void close() {
        log.close();
    }
}
