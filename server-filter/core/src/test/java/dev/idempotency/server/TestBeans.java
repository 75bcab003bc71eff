package dev.idempotency.server;

import dev.idempotency.testsupport.MutableClock;

import io.micrometer.core.instrument.MeterRegistry;
import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import io.micronaut.context.annotation.Factory;
import io.micronaut.context.annotation.Requires;
import jakarta.inject.Singleton;

/**
 * The fake clock and a Micrometer registry, for the tests that move time themselves:
 * {@link IdempotencyFilterTest} (and {@link IdempotencyEndpointTest}, which runs under its name),
 * {@link ConcurrencyAndLeaseTest} and {@link InMemoryScheduledPurgeTest}.
 */
@Factory
@Requires(property = "spec.name", pattern = "IdempotencyFilterTest|ConcurrencyAndLeaseTest|InMemoryScheduledPurgeTest")
class TestBeans {

    @Singleton
    MutableClock clock() {
        return new MutableClock();
    }

    @Singleton
    MeterRegistry meterRegistry() {
        return new SimpleMeterRegistry();
    }
}
