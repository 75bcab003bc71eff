package dev.idempotency.store.redis;

import ch.qos.logback.classic.Level;
import ch.qos.logback.classic.Logger;
import ch.qos.logback.classic.spi.ILoggingEvent;
import ch.qos.logback.core.read.ListAppender;
import org.slf4j.LoggerFactory;

import java.util.List;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * The Redis store's log at INFO while open (the tests' root level is WARN), kept for a test to
 * read; closing restores the level and stops keeping.
 */
final class StoreLog implements AutoCloseable {

    private final Logger logger = (Logger) LoggerFactory.getLogger(RedisIdempotencyStore.class);
    private final Level level;
    private final ListAppender<ILoggingEvent> kept = new ListAppender<>();

    StoreLog() {
        level = logger.getLevel();
        logger.setLevel(Level.INFO);
        kept.start();
        logger.addAppender(kept);
    }

    /** @return the once-only line saying that loops of another transport share one connection (exactly one) */
    String otherTransportLine() {
        List<String> lines = kept.list.stream().map(ILoggingEvent::getFormattedMessage)
            .filter(m -> m.contains("do not run the transport Lettuce uses")).toList();
        assertThat(lines).as("the store's line about loops of another transport").hasSize(1);
        return lines.get(0);
    }

    @Override
    public void close() {
        logger.detachAppender(kept);
        logger.setLevel(level);
    }
}
