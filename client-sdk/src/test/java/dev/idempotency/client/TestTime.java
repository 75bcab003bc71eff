package dev.idempotency.client;

import dev.idempotency.testsupport.MutableClock;

import java.time.Duration;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.function.Consumer;

/** A sleeper that records the waits and moves a {@link MutableClock} by them. */
final class TestTime {

    static final class RecordingSleeper implements Sleeper {
        final List<Duration> sleeps = new CopyOnWriteArrayList<>();
        private final MutableClock clock;
        volatile Consumer<Duration> onSleep = d -> { };
        /** The wait "ends" when this completes (it runs on the event loop: never block in onSleep). */
        volatile CompletableFuture<?> until = CompletableFuture.completedFuture(null);

        RecordingSleeper(MutableClock clock) {
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
