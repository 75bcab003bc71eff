package dev.idempotency.examples.payments;

import io.micronaut.core.annotation.Nullable;
import io.micronaut.serde.annotation.Serdeable;

import java.math.BigDecimal;
import java.util.Map;

/**
 * Request bodies. Every member is optional at the JSON level and checked by
 * {@link PaymentService}, so a bad request gets a 400 that names the member and the rule.
 * Amounts are read as {@link BigDecimal}: {@code 1000}, {@code 1000.0} and {@code 1e3} are the
 * same amount (as they are the same request for the Idempotency-Key fingerprint), while
 * {@code 10.5} is rejected instead of being silently truncated.
 */
final class Requests {

    private Requests() {
    }

    /**
     * {@code POST /payments}.
     *
     * @param amount      minor units, a whole number from 1 to {@value PaymentService#MAX_AMOUNT}
     * @param currency    ISO 4217 code in upper case, e.g. {@code EUR}
     * @param description optional free text
     * @param customer    optional customer reference
     * @param metadata    optional key/value pairs
     */
    @Serdeable
    record CreatePayment(@Nullable BigDecimal amount, @Nullable String currency, @Nullable String description,
                         @Nullable String customer, @Nullable Map<String, String> metadata) {
    }

    /**
     * {@code POST /payments/{id}/capture}.
     *
     * @param amount how much of the authorized amount to capture; absent: all of it
     */
    @Serdeable
    record Capture(@Nullable BigDecimal amount) {
    }

    /**
     * {@code POST /payments/{id}/refunds}.
     *
     * @param amount how much to refund; absent: everything still refundable
     * @param reason optional free text
     */
    @Serdeable
    record CreateRefund(@Nullable BigDecimal amount, @Nullable String reason) {
    }

    /**
     * {@code PATCH /payments/{id}}.
     *
     * @param description replaces the description; {@code ""} removes it
     * @param metadata    merged into the metadata; a key with the value {@code ""} is removed
     */
    @Serdeable
    record UpdatePayment(@Nullable String description, @Nullable Map<String, String> metadata) {
    }
}
