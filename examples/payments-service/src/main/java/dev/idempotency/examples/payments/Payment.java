package dev.idempotency.examples.payments;

import io.micronaut.core.annotation.Nullable;
import io.micronaut.serde.annotation.Serdeable;

import java.time.Instant;
import java.util.List;
import java.util.Map;

/**
 * A payment as the API shows it. Immutable: every state transition builds a new value, so a
 * reader never sees half of a change.
 *
 * @param id             {@code pay_...}
 * @param status         where the payment is in its life
 * @param amount         the authorized amount, in minor units (cents for EUR)
 * @param currency       ISO 4217 code, upper case
 * @param amountCaptured captured so far (0 until captured)
 * @param amountRefunded refunded so far
 * @param description    free text, may be absent
 * @param customer       the customer's reference, may be absent
 * @param metadata       the caller's key/value pairs
 * @param refunds        the refunds, oldest first
 * @param createdAt      creation time
 * @param updatedAt      time of the last change
 */
@Serdeable
public record Payment(
    String id,
    PaymentStatus status,
    long amount,
    String currency,
    long amountCaptured,
    long amountRefunded,
    @Nullable String description,
    @Nullable String customer,
    Map<String, String> metadata,
    List<Refund> refunds,
    Instant createdAt,
    Instant updatedAt) {

    /** @return how much can still be refunded */
    public long refundable() {
        return amountCaptured - amountRefunded;
    }
}
