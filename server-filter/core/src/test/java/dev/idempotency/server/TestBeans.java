package dev.idempotency.server;

import io.micrometer.core.instrument.MeterRegistry;
import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import io.micronaut.context.annotation.Factory;
import io.micronaut.context.annotation.Requires;
import jakarta.inject.Singleton;

/** The fake clock and a Micrometer registry for {@link IdempotencyFilterTest}. */
@Factory
@Requires(property = "spec.name", value = "IdempotencyFilterTest")
class TestBeans {

    @Singleton
    FakeClock clock() {
        return new FakeClock();
    }

    @Singleton
    MeterRegistry meterRegistry() {
        return new SimpleMeterRegistry();
    }
}
