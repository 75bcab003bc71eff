package dev.idempotency.client.internal.metrics;

import io.github.resilience4j.micrometer.tagged.TaggedRetryMetrics;
import io.github.resilience4j.retry.RetryRegistry;
import io.micrometer.core.instrument.Counter;
import io.micrometer.core.instrument.MeterRegistry;

/**
 * Meters: {@code idempotency.client.attempts{client}}, {@code idempotency.client.retries{client,reason}},
 * {@code idempotency.client.outcomes{client,outcome}}, plus resilience4j's own
 * {@code resilience4j.retry.calls{name,kind}} for the client's Retry.
 */
final class MicrometerClientMetrics implements ClientMetrics {

    private final MeterRegistry registry;
    private final String client;
    private final Counter attempts;

    private MicrometerClientMetrics(MeterRegistry registry, String client) {
        this.registry = registry;
        this.client = client;
        this.attempts = Counter.builder("idempotency.client.attempts")
            .description("Requests sent by idempotent clients, retries included")
            .tag("client", client).register(registry);
    }

    static ClientMetrics create(Object meterRegistry, String client, RetryRegistry retries) {
        MeterRegistry registry = (MeterRegistry) meterRegistry;
        TaggedRetryMetrics.ofRetryRegistry(retries).bindTo(registry);
        return new MicrometerClientMetrics(registry, client);
    }

    @Override
    public void attempt() {
        attempts.increment();
    }

    @Override
    public void retry(String reason) {
        Counter.builder("idempotency.client.retries").description("Retries scheduled, by reason")
            .tag("client", client).tag("reason", reason).register(registry).increment();
    }

    @Override
    public void outcome(String outcome) {
        Counter.builder("idempotency.client.outcomes").description("Idempotent operations, by outcome")
            .tag("client", client).tag("outcome", outcome).register(registry).increment();
    }
}
