package dev.idempotency.messaging;

import java.time.Duration;
import java.util.Objects;

/**
 * What a broker adapter does with a delivery once the {@link IdempotentConsumer} decided, always
 * after the outcome is stored (CONTRACT M4).
 */
public sealed interface Disposition {

    /** @return how the delivery ended, for metrics and logs */
    DeliveryOutcome outcome();

    /** Acknowledge: processed now, or before (a duplicate). */
    record Ack(DeliveryOutcome outcome) implements Disposition {
    }

    /**
     * Bring the message back after {@code delay}.
     *
     * @param counted whether this counts as a failed attempt (the handler failed), which the
     *                adapter adds to the message's attempt count; a message whose id is in
     *                progress elsewhere, or a store that did not answer, does not count
     */
    record Retry(Duration delay, String reason, boolean counted, DeliveryOutcome outcome) implements Disposition {
        public Retry {
            Objects.requireNonNull(delay, "delay");
            Objects.requireNonNull(reason, "reason");
        }
    }

    /** Give up: send the message to the dead-letter queue with {@code reason}. */
    record DeadLetter(String reason) implements Disposition {
        public DeadLetter {
            Objects.requireNonNull(reason, "reason");
        }

        @Override
        public DeliveryOutcome outcome() {
            return DeliveryOutcome.DEAD_LETTERED;
        }
    }
}
