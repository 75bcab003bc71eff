package dev.idempotency.examples.payments;

import dev.idempotency.examples.payments.SideEffectLedger.Operation;
import io.micronaut.core.annotation.Nullable;
import jakarta.inject.Singleton;

import java.util.Comparator;
import java.util.EnumMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicLong;
import java.util.function.UnaryOperator;

/**
 * The default business storage: immutable {@link Payment}s in a {@link ConcurrentHashMap}.
 * Every change runs inside {@link ConcurrentHashMap#compute}, so two captures or two refunds of
 * one payment never interleave: the second sees the first's result (and may be refused because
 * of it). Gone when the service stops.
 */
@Singleton
class InMemoryPaymentRepository implements PaymentRepository {

    private final ConcurrentHashMap<String, Payment> payments = new ConcurrentHashMap<>();
    private final Map<Operation, AtomicLong> sideEffects = new EnumMap<>(Operation.class);

    InMemoryPaymentRepository() {
        for (Operation op : Operation.values()) {
            sideEffects.put(op, new AtomicLong());
        }
    }

    @Override
    public void create(Payment payment) {
        if (payments.putIfAbsent(payment.id(), payment) != null) {
            throw new IllegalStateException("duplicate payment id " + payment.id());
        }
        sideEffects.get(Operation.CREATE).incrementAndGet();
    }

    @Override
    public Payment update(String id, Operation operation, UnaryOperator<Payment> change) {
        Payment updated = payments.compute(id, (k, p) -> {
            if (p == null) {
                throw PaymentException.notFound(id);
            }
            return change.apply(p);
        });
        sideEffects.get(operation).incrementAndGet();
        return updated;
    }

    @Override
    public Optional<Payment> find(String id) {
        return Optional.ofNullable(payments.get(id));
    }

    @Override
    public List<Payment> list(@Nullable String customer, int limit) {
        return payments.values().stream()
            .filter(p -> customer == null || customer.equals(p.customer()))
            .sorted(Comparator.comparing(Payment::createdAt).reversed().thenComparing(Payment::id))
            .limit(limit)
            .toList();
    }

    @Override
    public int count() {
        return payments.size();
    }

    @Override
    public Map<Operation, Long> sideEffects() {
        Map<Operation, Long> counts = new EnumMap<>(Operation.class);
        sideEffects.forEach((op, n) -> counts.put(op, n.get()));
        return counts;
    }
}
