package dev.idempotency.examples.payments;

import dev.idempotency.server.IdempotencyOutcome;
// tag::imports[]
import dev.idempotency.server.IdempotencyOutcomeEvent;
import io.micronaut.runtime.event.annotation.EventListener;
// end::imports[]
import io.micronaut.http.annotation.Controller;
import io.micronaut.http.annotation.Get;

import java.util.Map;
import java.util.TreeMap;
import java.util.concurrent.ConcurrentHashMap;
// tag::imports[]
import java.util.concurrent.atomic.LongAdder;
// end::imports[]

/**
 * {@code GET /stats/outcomes}: what the Idempotency-Key filter did with each request, counted from
 * its {@link IdempotencyOutcomeEvent}s. Business code that counts payments taken listens the same
 * way and counts only {@link IdempotencyOutcomeEvent#executed()}: a replay is never a new payment.
 */
@Controller("/stats/outcomes")
final class OutcomeAudit {

    private final Map<IdempotencyOutcome, LongAdder> counts = new ConcurrentHashMap<>();

    // tag::listener[]
    @EventListener
    void on(IdempotencyOutcomeEvent event) {
        // runs on the request's event loop: count, never block
        counts.computeIfAbsent(event.outcome(), o -> new LongAdder()).increment();
    }
    // end::listener[]

    @Get
    Map<String, Long> outcomes() {
        Map<String, Long> out = new TreeMap<>();
        counts.forEach((outcome, n) -> out.put(outcome.tag(), n.sum()));
        return out;
    }
}
