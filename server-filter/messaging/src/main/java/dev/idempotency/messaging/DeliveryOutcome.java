package dev.idempotency.messaging;

/** How a delivery ended (CONTRACT M4, M7). */
public enum DeliveryOutcome {
    /** The handler ran and its outcome was stored; acknowledged. */
    PROCESSED("processed"),
    /** The message id was processed before; acknowledged without running the handler. */
    DUPLICATE("duplicate"),
    /** The message id is being processed elsewhere, or the store could not answer: back in a while. */
    REQUEUED("requeued"),
    /** The handler failed: back in a while, counted against the redelivery limit. */
    RETRIED("retried"),
    /** Given up: sent to the dead-letter queue with the reason. */
    DEAD_LETTERED("dead-lettered");

    /** The metric tag. */
    public final String tag;

    DeliveryOutcome(String tag) {
        this.tag = tag;
    }
}
