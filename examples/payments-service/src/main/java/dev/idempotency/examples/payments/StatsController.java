package dev.idempotency.examples.payments;

import io.micronaut.http.annotation.Controller;
import io.micronaut.http.annotation.Get;
import io.micronaut.scheduling.TaskExecutors;
import io.micronaut.scheduling.annotation.ExecuteOn;

/**
 * {@code GET /stats}: how many side effects the service performed. After any mix of requests
 * and retries, {@code sideEffects} equals the number of distinct successful operations: a
 * replay answered by the Idempotency-Key filter never reaches a handler. On the blocking executor:
 * in the {@code postgres} environment the counts come from the database.
 */
@Controller("/stats")
@ExecuteOn(TaskExecutors.BLOCKING)
final class StatsController {

    private final SideEffectLedger ledger;
    private final PaymentRepository payments;

    StatsController(SideEffectLedger ledger, PaymentRepository payments) {
        this.ledger = ledger;
        this.payments = payments;
    }

    @Get
    SideEffectLedger.Stats stats() {
        return ledger.snapshot(payments.count());
    }
}
