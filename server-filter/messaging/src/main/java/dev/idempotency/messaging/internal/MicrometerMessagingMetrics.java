package dev.idempotency.messaging.internal;

import dev.idempotency.messaging.DeliveryOutcome;
import dev.idempotency.messaging.OutboxStore;
import io.micrometer.core.instrument.Counter;
import io.micrometer.core.instrument.Gauge;
import io.micrometer.core.instrument.MeterRegistry;
import io.micronaut.context.annotation.Requires;
import io.micronaut.core.annotation.Internal;
import jakarta.inject.Singleton;

import java.time.Clock;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;

/**
 * Micrometer meters of the messaging side (CONTRACT M7):
 * <ul>
 *   <li>{@code idempotency.outbox.published} (counter), tag {@code result}: added, duplicate;</li>
 *   <li>{@code idempotency.outbox.relayed} (counter), tag {@code result}: confirmed, failed, parked;</li>
 *   <li>{@code idempotency.outbox.depth} (gauge): messages waiting to be sent;</li>
 *   <li>{@code idempotency.outbox.lag} (gauge, seconds): how long the oldest has waited;</li>
 *   <li>{@code idempotency.deliveries} (counter), tags {@code consumer} and {@code outcome}:
 *       processed, duplicate, requeued, retried, dead-lettered.</li>
 * </ul>
 */
@Internal
@Singleton
@Requires(classes = MeterRegistry.class)
@Requires(beans = MeterRegistry.class)
public final class MicrometerMessagingMetrics implements MessagingMetrics {

    private final MeterRegistry registry;
    private final Counter added;
    private final Counter duplicate;
    private final Counter confirmed;
    private final Counter failed;
    private final Counter parked;
    private final Map<String, Counter> deliveries = new ConcurrentHashMap<>();

    public MicrometerMessagingMetrics(MeterRegistry registry) {
        this.registry = registry;
        this.added = Counter.builder("idempotency.outbox.published").tag("result", "added").register(registry);
        this.duplicate = Counter.builder("idempotency.outbox.published").tag("result", "duplicate").register(registry);
        this.confirmed = Counter.builder("idempotency.outbox.relayed").tag("result", "confirmed").register(registry);
        this.failed = Counter.builder("idempotency.outbox.relayed").tag("result", "failed").register(registry);
        this.parked = Counter.builder("idempotency.outbox.relayed").tag("result", "parked").register(registry);
    }

    @Override
    public void published(boolean wasAdded) {
        (wasAdded ? added : duplicate).increment();
    }

    @Override
    public void relayed(int c, int f, int p) {
        confirmed.increment(c);
        failed.increment(f);
        parked.increment(p);
    }

    @Override
    public void delivery(String consumer, DeliveryOutcome outcome) {
        deliveries.computeIfAbsent(consumer + '\n' + outcome.tag, k -> Counter.builder("idempotency.deliveries")
            .tag("consumer", consumer).tag("outcome", outcome.tag).register(registry)).increment();
    }

    @Override
    public void watch(OutboxStore store, Clock clock) {
        Gauge.builder("idempotency.outbox.depth", store, s -> safe(s::depth)).register(registry);
        Gauge.builder("idempotency.outbox.lag", store, s -> safe(() -> s.lag(clock.instant()).toMillis() / 1000.0))
            .baseUnit("seconds").register(registry);
    }

    private static double safe(java.util.function.Supplier<Number> value) {
        try {
            return value.get().doubleValue();
        } catch (RuntimeException e) {
            return Double.NaN; // the database is unreachable: no reading
        }
    }
}
