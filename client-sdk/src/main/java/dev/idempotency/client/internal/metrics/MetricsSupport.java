package dev.idempotency.client.internal.metrics;

import dev.idempotency.client.IdempotentClientConfig;
import io.micronaut.core.annotation.Internal;

/** Hands the application's meter registry to the clients the factory makes, when there is one. */
@Internal
public interface MetricsSupport {

    void configure(IdempotentClientConfig.Builder builder);
}
