package dev.idempotency.messaging.internal;

import dev.idempotency.messaging.DeliveryOutcome;
import dev.idempotency.messaging.OutboxStore;
import io.micronaut.core.annotation.Internal;

/**
 * What the messaging side counts (CONTRACT M7); Micrometer meters when the application has a
 * {@code MeterRegistry}, else nothing.
 */
@Internal
public interface MessagingMetrics {

    /** A message was published into the outbox ({@code added}) or was there already (a retried operation). */
    void published(boolean added);

    /** The relay sent {@code confirmed} messages and failed to send {@code failed}; {@code parked} were put aside. */
    void relayed(int confirmed, int failed, int parked);

    /** A consumer's delivery ended with {@code outcome}. */
    void delivery(String consumer, DeliveryOutcome outcome);

    /** Registers the outbox's depth and lag gauges. */
    default void watch(OutboxStore store, java.time.Clock clock) {
    }
}
