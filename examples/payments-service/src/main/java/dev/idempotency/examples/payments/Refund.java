package dev.idempotency.examples.payments;

import io.micronaut.core.annotation.Nullable;
import io.micronaut.serde.annotation.Serdeable;

import java.time.Instant;

/**
 * One refund of a captured payment.
 *
 * @param id        {@code re_...}
 * @param paymentId the refunded payment
 * @param amount    in minor units
 * @param reason    free text, may be absent
 * @param createdAt creation time
 */
@Serdeable
public record Refund(String id, String paymentId, long amount, @Nullable String reason, Instant createdAt) {
}
