package dev.idempotency.examples.ledger;

import io.micronaut.http.annotation.Controller;
import io.micronaut.http.annotation.Get;

/** {@code GET /ledger}: what the ledger booked. */
@Controller("/ledger")
final class LedgerController {

    private final Ledger ledger;

    LedgerController(Ledger ledger) {
        this.ledger = ledger;
    }

    @Get
    Ledger.View view() {
        return ledger.view();
    }
}
