package dev.idempotency.client;

import java.time.Clock;
import java.time.Duration;
import java.time.Instant;
import java.time.ZoneId;
import java.time.ZoneOffset;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.function.Consumer;

/** A clock that moves only when told, and a sleeper that records the waits and moves that clock. */
final class TestTime {

    static final class FakeClock extends Clock {
        private volatile Instant now;

        FakeClock(Instant start) {
            this.now = start;
        }

        void advance(Duration d) {
            now = now.plus(d);
        }

        @Override
        public ZoneId getZone() {
            return ZoneOffset.UTC;
        }

        @Override
        public Clock withZone(ZoneId zone) {
            return this;
        }

        @Override
        public Instant instant() {
            return now;
        }
    }

    static final class RecordingSleeper implements Sleeper {
        final List<Duration> sleeps = new CopyOnWriteArrayList<>();
        private final FakeClock clock;
        volatile Consumer<Duration> onSleep = d -> { };
        /** The wait "ends" when this completes (it runs on the event loop: never block in onSleep). */
        volatile CompletableFuture<?> until = CompletableFuture.completedFuture(null);

        RecordingSleeper(FakeClock clock) {
            this.clock = clock;
        }

        @Override
        public CompletionStage<Void> sleep(Duration duration) {
            sleeps.add(duration);
            clock.advance(duration);
            onSleep.accept(duration);
            return until.thenApply(x -> null);
        }
    }

    private TestTime() {
    }
}
