package dev.idempotency.server;

/**
 * What the filter did with a request under the Idempotency-Key contract. The same values name
 * the {@code idempotency.outcome} span attribute (CONTRACT O4), the outcome of an
 * {@link IdempotencyOutcomeEvent} and, except {@link #RESUMED}, which the counter counts as
 * {@link #EXECUTED}, the {@code outcome} tag of the {@code idempotency.requests} counter (S22).
 * The {@linkplain #tag() tags} are a published interface: dashboards depend on them.
 */
public enum IdempotencyOutcome {
    /** The route ran for this request, and its response is stored for replays. */
    EXECUTED("executed"),
    /**
     * The route ran again after an earlier execution of the same key had stopped (its lease
     * ended), and got at least one of that execution's durable steps back instead of running it.
     */
    RESUMED("resumed"),
    /** The stored response of an earlier execution was sent again; the route did not run. */
    REPLAYED("replayed"),
    /** 409: the same key is still running elsewhere; the route did not run. */
    CONFLICT("conflict"),
    /** 422: the key was used with another request; the route did not run. */
    MISMATCH("mismatch"),
    /** 400 (or 413): no usable key, or a request the contract refuses; the route did not run. */
    REJECTED("rejected"),
    /** 503: the store could not be reached or could not confirm; the route did not run. */
    STORE_ERROR("store-error");

    private final String tag;

    IdempotencyOutcome(String tag) {
        this.tag = tag;
    }

    /** @return the value as it appears in spans, metrics and log lines, e.g. {@code store-error} */
    public String tag() {
        return tag;
    }
}
