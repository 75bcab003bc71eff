package dev.idempotency.testsupport;

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
 * The lines one logger (and the loggers under it) writes while a test runs, kept for the test to
 * read. Every line the logger lets through is captured, so at least those of {@code from} and
 * above: while capturing, the logger's level is lowered to {@code from} when the tests' logging
 * configuration (WARN) would drop them, and put back afterwards; a logger already more verbose
 * is left as it is, and its lower lines are captured too (filter by level when that matters).
 *
 * <p>Two forms: for every test of a class, a JUnit extension registered as an instance field with
 * {@code @RegisterExtension}; for part of one test, {@link #start()} in a try-with-resources, so
 * the lower level stays within that test.
 *
 * <pre>{@code
 * try (LogCapture log = LogCapture.of(IdempotencyFilter.LOG_CATEGORY, Level.DEBUG).start()) {
 *     ... // five uploads aborted mid-body
 *     assertThat(log.linesContaining("before its body was read")).hasSize(5);
 * }
 * }</pre>
 *
 * Reading is safe while other threads still log: every read returns a copy. Needs logback-classic
 * as the tests' SLF4J binding (an optional dependency of this module).
 */
public final class LogCapture implements BeforeEachCallback, AfterEachCallback, AutoCloseable {

    private final Logger logger;
    private final ListAppender<ILoggingEvent> appender = new ListAppender<>();
    private final Level from;
    private Level configured;

    private LogCapture(Logger logger, Level from) {
        this.logger = logger;
        this.from = from;
    }

    /** @return a capture of the logger named after {@code type}, not started */
    public static LogCapture of(Class<?> type, Level from) {
        return of(type.getName(), from);
    }

    /** @return a capture of the logger {@code name} ({@code Logger.ROOT_LOGGER_NAME} for every logger), not started */
    public static LogCapture of(String name, Level from) {
        return new LogCapture((Logger) LoggerFactory.getLogger(name), from);
    }

    /** Starts capturing, with nothing captured yet. @return this */
    public LogCapture start() {
        configured = logger.getLevel();
        if (!logger.isEnabledFor(from)) {
            logger.setLevel(from);
        }
        synchronized (appender) {
            appender.list.clear();
        }
        appender.start();
        logger.addAppender(appender);
        return this;
    }

    /** Stops capturing and puts the logger's level back; what was captured stays readable. */
    @Override
    public void close() {
        logger.detachAppender(appender);
        appender.stop();
        logger.setLevel(configured);
    }

    @Override
    public void beforeEach(ExtensionContext context) {
        start();
    }

    @Override
    public void afterEach(ExtensionContext context) {
        close();
    }

    /** @return every line captured so far, in order */
    public List<ILoggingEvent> events() {
        synchronized (appender) { // appends hold the appender's lock (AppenderBase.doAppend)
            return new ArrayList<>(appender.list);
        }
    }

    /** @return the formatted text of every line captured so far, in order */
    public List<String> lines() {
        return events().stream().map(ILoggingEvent::getFormattedMessage).toList();
    }

    /** @return the formatted lines of {@code level} (that level only), in order */
    public List<String> lines(Level level) {
        return lines(level, "");
    }

    /** @return the formatted lines of {@code level} that start with {@code prefix}, in order */
    public List<String> lines(Level level, String prefix) {
        return events().stream().filter(e -> e.getLevel() == level)
            .map(ILoggingEvent::getFormattedMessage).filter(m -> m.startsWith(prefix)).toList();
    }

    /** @return the formatted lines that contain {@code text}, of any level, in order */
    public List<String> linesContaining(String text) {
        return lines().stream().filter(m -> m.contains(text)).toList();
    }
}
