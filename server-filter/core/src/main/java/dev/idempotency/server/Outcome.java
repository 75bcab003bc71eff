package dev.idempotency.server;

/** What the filter did with a covered request; the {@code outcome} tag of the metrics. */
enum Outcome {
    EXECUTED("executed"),
    REPLAYED("replayed"),
    CONFLICT("conflict"),
    MISMATCH("mismatch"),
    REJECTED("rejected"),
    STORE_ERROR("store-error");

    final String tag;

    Outcome(String tag) {
        this.tag = tag;
    }
}
