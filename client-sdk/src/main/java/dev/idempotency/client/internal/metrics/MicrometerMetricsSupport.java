package dev.idempotency.client.internal.metrics;

import dev.idempotency.client.IdempotentClientConfig;
import io.github.resilience4j.micrometer.tagged.TaggedRetryMetrics;
import io.micrometer.core.instrument.MeterRegistry;
import io.micronaut.context.annotation.Requires;
import jakarta.inject.Singleton;

@Singleton
@Requires(classes = {MeterRegistry.class, TaggedRetryMetrics.class})
@Requires(beans = MeterRegistry.class)
final class MicrometerMetricsSupport implements MetricsSupport {

    private final MeterRegistry registry;

    MicrometerMetricsSupport(MeterRegistry registry) {
        this.registry = registry;
    }

    @Override
    public void configure(IdempotentClientConfig.Builder builder) {
        builder.meterRegistry(registry);
    }
}
