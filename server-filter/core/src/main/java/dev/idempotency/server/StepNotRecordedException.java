package dev.idempotency.server;

/**
 * A durable step's work ran, but its result was not recorded (CONTRACT S23), so the next
 * execution of the operation will run the step again. The filter answers the request for you:
 * {@link Reason#STORE_UNAVAILABLE} with 503 {@code idempotency-store-unavailable} and
 * {@code Retry-After}, {@link Reason#LEASE_LOST} with 409 {@code request-in-progress} (another
 * execution holds the operation now), {@link Reason#TOO_LARGE} with 500 (a result over the bound
 * is the application's to fix). In each case the key is released and the steps recorded before
 * are kept.
 */
public final class StepNotRecordedException extends RuntimeException {

    /** Why the result was not recorded. */
    public enum Reason {
        /** The encoded result is larger than {@code idempotency.steps.max-bytes}. */
        TOO_LARGE,
        /** The store did not answer, or had no room, for as long as a completion would be retried. */
        STORE_UNAVAILABLE,
        /** The execution lost its lease to another one (a takeover): its step record was fenced off. */
        LEASE_LOST
    }

    private final String step;
    private final Reason reason;

    /**
     * @param step    the step's name
     * @param reason  why
     * @param message what happened and what to do
     * @param cause   the store's failure, if any
     */
    public StepNotRecordedException(String step, Reason reason, String message, Throwable cause) {
        super(message, cause);
        this.step = step;
        this.reason = reason;
    }

    /** @return the step's name */
    public String step() {
        return step;
    }

    /** @return why its result was not recorded */
    public Reason reason() {
        return reason;
    }
}
