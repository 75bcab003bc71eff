package dev.idempotency.examples.payments;

import io.micronaut.http.annotation.Controller;
import io.micronaut.http.annotation.Get;

/**
 * {@code GET /stats}: how many side effects the service performed. After any mix of requests
 * and retries, {@code sideEffects} equals the number of distinct successful operations: a
 * replay answered by the Idempotency-Key filter never reaches a handler.
 */
@Controller("/stats")
final class StatsController {

    private final SideEffectLedger ledger;
    private final PaymentService payments;

    StatsController(SideEffectLedger ledger, PaymentService payments) {
        this.ledger = ledger;
        this.payments = payments;
    }

    @Get
    SideEffectLedger.Stats stats() {
        return ledger.snapshot(payments.count());
    }
}
