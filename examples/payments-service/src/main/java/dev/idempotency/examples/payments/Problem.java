package dev.idempotency.examples.payments;

import io.micronaut.serde.annotation.Serdeable;

/**
 * An RFC 9457 problem body for the service's own business errors. The filter's rejections
 * ({@code idempotency-key-*}) have the same members, so a client can branch on {@code code}
 * alone.
 *
 * @param type   a URI naming the problem type
 * @param title  short summary of the problem type
 * @param status the HTTP status
 * @param detail what went wrong with this request
 * @param code   a stable machine-readable code, e.g. {@code refund-exceeds-captured}
 */
@Serdeable
public record Problem(String type, String title, int status, String detail, String code) {

    /** The base of the service's problem types. */
    public static final String TYPE_BASE = "https://example.com/payments-service/problems#";

    static Problem of(PaymentException e) {
        return new Problem(TYPE_BASE + e.code(), e.title(), e.status(), e.getMessage(), e.code());
    }
}
