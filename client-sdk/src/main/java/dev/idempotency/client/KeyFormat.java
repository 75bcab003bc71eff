package dev.idempotency.client;

/**
 * How the client writes the {@code Idempotency-Key} header (CONTRACT C2).
 */
public enum KeyFormat {
    /**
     * An RFC 9651 sf-string: {@code "8e03978e-..."}, with {@code \"} and {@code \\} escaped. The
     * default, and the form the draft specifies.
     */
    QUOTED,
    /**
     * The bare value, as Stripe clients send it: {@code 8e03978e-...}. A key that cannot be sent
     * bare (it holds a space, {@code "}, {@code \} or {@code ,}) is rejected before any request.
     */
    BARE
}
