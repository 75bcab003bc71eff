package dev.idempotency.server.internal.telemetry;

import io.micronaut.core.annotation.Internal;

/** What the filter did with a covered request; the {@code outcome} tag of the metrics. */
@Internal
public enum Outcome {
    EXECUTED("executed"),
    REPLAYED("replayed"),
    CONFLICT("conflict"),
    MISMATCH("mismatch"),
    REJECTED("rejected"),
    STORE_ERROR("store-error");

    public final String tag;

    Outcome(String tag) {
        this.tag = tag;
    }
}
