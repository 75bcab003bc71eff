package dev.idempotency.examples.payments;

import dev.idempotency.examples.payments.SideEffectLedger.Operation;
import io.micronaut.core.annotation.Nullable;

import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.function.UnaryOperator;

/**
 * Where the service keeps its business data: the payments, their refunds, and the count of
 * side effects behind {@code GET /stats}. Every write method is one atomic unit that stores the
 * change together with its side effect, so the count never disagrees with the data.
 *
 * <ul>
 *   <li>{@link InMemoryPaymentRepository}: the default, no database needed; gone on restart.</li>
 *   <li>{@link JdbcPaymentRepository}: the {@code postgres} environment. Its writes join the
 *       transaction the Idempotency-Key filter opens in transactional mode (CONTRACT S18), so a
 *       payment and its idempotency record commit or roll back together.</li>
 * </ul>
 */
interface PaymentRepository {

    /**
     * Stores a new payment and counts one {@link Operation#CREATE} side effect.
     *
     * @param payment the payment, with a fresh id
     */
    void create(Payment payment);

    /**
     * Changes one payment atomically: reads it, guarded against every concurrent change of the
     * same payment until this one is stored, applies {@code change}, stores the result (with any
     * refund it added) and counts one side effect of {@code operation}. When {@code change} throws
     * (a business refusal), nothing is changed and nothing is counted.
     *
     * @param id        the payment
     * @param operation the side effect to count
     * @param change    the new value from the current one; may throw {@link PaymentException}
     * @return the stored new value
     * @throws PaymentException {@code payment-not-found} when there is no such payment, or what
     *                          {@code change} threw
     */
    Payment update(String id, Operation operation, UnaryOperator<Payment> change);

    Optional<Payment> find(String id);

    /** @return at most {@code limit} payments, newest first, optionally of one customer */
    List<Payment> list(@Nullable String customer, int limit);

    /** @return how many payments are stored */
    int count();

    /** @return the side effects performed, per operation (every operation present, 0 when none) */
    Map<Operation, Long> sideEffects();
}
