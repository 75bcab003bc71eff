package dev.idempotency.examples.payments;

import io.micronaut.context.annotation.Requires;
import io.micronaut.context.annotation.Value;
import jakarta.inject.Singleton;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Locale;

/**
 * TEST ONLY: kills the process ({@link Runtime#halt}, as {@code kill -9} would) the first time a
 * capture reaches the configured point, so that the chain test and the demo show what a crash at
 * each step boundary of a capture leaves behind. Set by {@code payments.test.crash-at} (one of
 * {@link Point}'s names, lower case with dashes) and {@code payments.test.crash-marker}, a file
 * made at the crash, so that the process started again with the same settings runs on. No
 * configuration file of the example sets them.
 */
@Singleton
@Requires(property = "payments.test.crash-at")
final class CrashPoints {

    private static final Logger LOG = LoggerFactory.getLogger(CrashPoints.class);

    /** The step boundaries of a capture that charges through the gateway. */
    enum Point {
        /** The capture runs, the gateway was not called yet. */
        BEFORE_CHARGE,
        /** The gateway charged; the charge is not recorded as a step yet. */
        AFTER_CHARGE,
        /** The charge's step is recorded (in transactional mode: the capture is written, not committed). */
        AFTER_CHARGE_RECORDED,
        /** The capture's response went out. */
        AFTER_RESPONSE
    }

    private final Point point;
    private final Path marker;
    /** Set once the crash is decided: the process dies a moment later. */
    private volatile boolean dying;

    CrashPoints(@Value("${payments.test.crash-at}") String point, @Value("${payments.test.crash-marker}") String marker) {
        this.point = Point.valueOf(point.toUpperCase(Locale.ROOT).replace('-', '_'));
        this.marker = Path.of(marker);
    }

    /**
     * Dies here, once, when this is the configured point. Once the crash is decided (here, or
     * claimed by {@link #claim}), every other capture that reaches a point waits for the end:
     * the crash meets the one capture at the point under test, and no other one half-way. In
     * leased mode a capture killed between its write to the payments table and its record's
     * completion would run again and be refused as captured already, which is what
     * transactional mode is for, not what this test point is about.
     */
    void at(Point reached) {
        if (dying) {
            awaitTheEnd();
        }
        if (reached == point && armed()) {
            LOG.warn("TEST ONLY: crashing at {}", reached);
            Runtime.getRuntime().halt(137);
        }
    }

    /** @return whether the crash at {@code reached} is still to come (and now claimed: the caller halts) */
    boolean claim(Point reached) {
        if (reached == point && armed()) {
            LOG.warn("TEST ONLY: crashing at {} in a moment", reached);
            return true;
        }
        return false;
    }

    private static void awaitTheEnd() {
        while (true) {
            try {
                Thread.sleep(Long.MAX_VALUE);
            } catch (InterruptedException e) {
                // the halt ends this thread with the process
            }
        }
    }

    private boolean armed() {
        try {
            Files.createFile(marker);
            dying = true;
            return true;
        } catch (java.nio.file.FileAlreadyExistsException e) {
            return false;
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }
}
