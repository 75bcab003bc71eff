package dev.idempotency.server.store;

import io.micronaut.core.annotation.Nullable;

import java.time.Duration;
import java.util.Objects;

/**
 * The outcome of {@link IdempotencyStore#acquire}.
 */
public sealed interface AcquireResult {

    /**
     * The caller now holds the record and must run the request, then complete or release it
     * with {@code fencingToken}.
     *
     * @param fencingToken the token that guards completion, release and renewal
     * @param takeover     {@code true} when an earlier holder's expired lease was taken over
     */
    record Acquired(long fencingToken, boolean takeover) implements AcquireResult {
    }

    /**
     * A completed record with the same fingerprint exists; its response is to be replayed.
     *
     * @param response the stored response
     */
    record Replay(StoredResponse response) implements AcquireResult {
        public Replay {
            Objects.requireNonNull(response, "response");
        }
    }

    /**
     * A request with the same key and fingerprint is still running under a live lease.
     *
     * @param remainingLease how long the lease still runs (never negative)
     * @param traceparent    the W3C trace context of the run in progress, as its acquire passed it
     *                       (CONTRACT O4), or {@code null} when it passed none or the store keeps none;
     *                       a value that is not a valid {@code traceparent} becomes {@code null}
     */
    record InProgress(Duration remainingLease, @Nullable String traceparent) implements AcquireResult {
        public InProgress {
            Objects.requireNonNull(remainingLease, "remainingLease");
            if (remainingLease.isNegative()) {
                remainingLease = Duration.ZERO;
            }
            if (traceparent != null && !StoredResponse.validTraceparent(traceparent)) {
                traceparent = null;
            }
        }

        /** @param remainingLease how long the lease still runs; the run's trace context is not known */
        public InProgress(Duration remainingLease) {
            this(remainingLease, null);
        }
    }

    /**
     * A live record (in progress or completed) exists for this key with another fingerprint.
     * The record was not changed.
     */
    record Mismatch() implements AcquireResult {
    }
}
