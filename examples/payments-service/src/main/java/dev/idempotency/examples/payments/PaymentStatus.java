package dev.idempotency.examples.payments;

/** The life of a payment: authorized, then captured (in full or in part), then maybe refunded. */
public enum PaymentStatus {
    /** Created: the amount is authorized, nothing is captured yet. */
    AUTHORIZED,
    /** Captured; nothing refunded. */
    CAPTURED,
    /** Captured; part of the captured amount is refunded. */
    PARTIALLY_REFUNDED,
    /** The whole captured amount is refunded. */
    REFUNDED
}
