package dev.idempotency.server;

import ch.qos.logback.classic.Level;
import ch.qos.logback.classic.Logger;
import ch.qos.logback.classic.spi.ILoggingEvent;
import ch.qos.logback.core.read.ListAppender;
import org.junit.jupiter.api.extension.AfterEachCallback;
import org.junit.jupiter.api.extension.BeforeEachCallback;
import org.junit.jupiter.api.extension.ExtensionContext;
import org.slf4j.LoggerFactory;

import java.util.ArrayList;
import java.util.List;

/**
 * The filter's log lines written while a test runs, captured from {@code from} up, lowering the
 * logger's level meanwhile when the tests' logging configuration (WARN) would drop them. Two
 * forms: for every test of a class, a JUnit extension registered as an instance field with
 * {@code @RegisterExtension}; for part of one test, {@link #capture(Level)} in a
 * try-with-resources, so the lower level stays within that test.
 */
final class FilterLog implements BeforeEachCallback, AfterEachCallback, AutoCloseable {

    private final Logger logger = (Logger) LoggerFactory.getLogger(IdempotencyFilter.class);
    private final ListAppender<ILoggingEvent> appender = new ListAppender<>();
    private final Level from;
    private Level configured;

    FilterLog(Level from) {
        this.from = from;
    }

    /** @return a capture that runs until it is closed */
    static FilterLog capture(Level from) {
        FilterLog log = new FilterLog(from);
        log.start();
        return log;
    }

    @Override
    public void beforeEach(ExtensionContext context) {
        start();
    }

    @Override
    public void afterEach(ExtensionContext context) {
        close();
    }

    private void start() {
        configured = logger.getLevel();
        if (!logger.isEnabledFor(from)) {
            logger.setLevel(from);
        }
        appender.list.clear();
        appender.start();
        logger.addAppender(appender);
    }

    @Override
    public void close() {
        logger.detachAppender(appender);
        appender.stop();
        logger.setLevel(configured);
    }

    /** @return the formatted lines of {@code level} that start with {@code prefix}, in order */
    List<String> lines(Level level, String prefix) {
        return events().stream().filter(e -> e.getLevel() == level)
            .map(ILoggingEvent::getFormattedMessage).filter(m -> m.startsWith(prefix)).toList();
    }

    /** @return the formatted text of every line captured so far, in order */
    List<String> lines() {
        return events().stream().map(ILoggingEvent::getFormattedMessage).toList();
    }

    /** @return every line captured so far, in order */
    List<ILoggingEvent> events() {
        synchronized (appender) { // appends hold the appender's lock
            return new ArrayList<>(appender.list);
        }
    }
}
