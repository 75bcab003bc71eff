package dev.idempotency.examples.payments;

import io.micronaut.context.annotation.Requires;
import jakarta.inject.Singleton;

import java.util.concurrent.atomic.AtomicInteger;

/**
 * TEST ONLY: makes a create fail right AFTER its business write, to show the transactional
 * mode's guarantee (CONTRACT S18) end to end: the failure rolls back the payment row, its side
 * effect and the idempotency record together, and a retry with the same key runs as if the
 * first attempt never happened.
 *
 * <p>The bean exists only in the {@code postgres} environment and only when
 * {@code payments.test.failure-injection=true}, which no configuration file of the example sets
 * (the tests do). It has no HTTP surface: a test arms it through the bean, once per failure.
 */
@Singleton
@Requires(env = "postgres")
@Requires(property = "payments.test.failure-injection", value = "true")
final class TestFailureInjection {

    private final AtomicInteger armed = new AtomicInteger();

    /** The next create fails after its write. */
    void failNextCreate() {
        armed.incrementAndGet();
    }

    /**
     * Called by {@link PaymentService#create} once the payment is written (inside the request's
     * transaction in transactional mode).
     *
     * @param payment the payment just written
     * @throws IllegalStateException when armed: the handler fails with a 500
     */
    void afterCreate(Payment payment) {
        if (armed.getAndUpdate(n -> Math.max(0, n - 1)) > 0) {
            throw new IllegalStateException("TEST ONLY: injected failure after writing payment " + payment.id());
        }
    }
}
