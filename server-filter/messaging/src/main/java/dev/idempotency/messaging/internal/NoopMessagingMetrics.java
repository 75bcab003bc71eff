package dev.idempotency.messaging.internal;

import dev.idempotency.messaging.DeliveryOutcome;
import io.micronaut.context.annotation.Requires;
import io.micronaut.core.annotation.Internal;
import jakarta.inject.Singleton;

/** No metrics: the application has no Micrometer registry. */
@Internal
@Singleton
@Requires(missingBeans = MicrometerMessagingMetrics.class)
public final class NoopMessagingMetrics implements MessagingMetrics {

    @Override
    public void published(boolean added) {
    }

    @Override
    public void relayed(int confirmed, int failed, int parked) {
    }

    @Override
    public void delivery(String consumer, DeliveryOutcome outcome) {
    }
}
