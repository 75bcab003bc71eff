package dev.idempotency.server;

import ch.qos.logback.classic.Level;
import ch.qos.logback.classic.Logger;
import ch.qos.logback.classic.spi.ILoggingEvent;
import ch.qos.logback.core.read.ListAppender;
import org.junit.jupiter.api.extension.AfterEachCallback;
import org.junit.jupiter.api.extension.BeforeEachCallback;
import org.junit.jupiter.api.extension.ExtensionContext;
import org.slf4j.LoggerFactory;

import java.util.List;

/**
 * The filter's log lines written while one test runs (a JUnit extension: register it as an
 * instance field with {@code @RegisterExtension}). It captures from {@code from} up, lowering the
 * logger's level for the test when the tests' logging configuration (WARN) would drop them.
 */
final class FilterLog implements BeforeEachCallback, AfterEachCallback {

    private final Logger logger = (Logger) LoggerFactory.getLogger(IdempotencyFilter.class);
    private final ListAppender<ILoggingEvent> appender = new ListAppender<>();
    private final Level from;
    private Level configured;

    FilterLog(Level from) {
        this.from = from;
    }

    @Override
    public void beforeEach(ExtensionContext context) {
        configured = logger.getLevel();
        if (!logger.isEnabledFor(from)) {
            logger.setLevel(from);
        }
        appender.list.clear();
        appender.start();
        logger.addAppender(appender);
    }

    @Override
    public void afterEach(ExtensionContext context) {
        logger.detachAppender(appender);
        appender.stop();
        logger.setLevel(configured);
    }

    /** @return the formatted lines of {@code level} that start with {@code prefix}, in order */
    List<String> lines(Level level, String prefix) {
        synchronized (appender) { // appends hold the appender's lock
            return appender.list.stream().filter(e -> e.getLevel() == level)
                .map(ILoggingEvent::getFormattedMessage).filter(m -> m.startsWith(prefix)).toList();
        }
    }
}
