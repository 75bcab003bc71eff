package dev.idempotency.server.store;

import dev.idempotency.server.internal.util.HexDigits;
import io.micronaut.core.annotation.Nullable;
import java.time.Duration;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;

/**
 * Where idempotency records live: the asynchronous store SPI (CONTRACT S17). Per covered
 * request the server filter calls {@link #acquire} once (again every 50 ms while a route with
 * {@code inFlightWait} waits for the original), {@link #renew} about every third of the lease
 * while a long handler runs, and then {@link #complete} or {@link #release} once; a failed
 * completion is retried with backoff for up to half the lease.
 *
 * <h2>Asynchronous, never blocking</h2>
 * Every operation returns at once with a {@link CompletionStage}; no operation blocks the
 * calling thread, which is often an event-loop thread of the HTTP server. A store whose client
 * library can only block runs that work on threads of its own: implement
 * {@link BlockingIdempotencyStore} instead and let {@link BlockingStoreAdapter} run it on a
 * bounded executor. A stage may complete on any thread, including the store client's own I/O
 * thread: callers must not block in dependent actions (the filter moves its work off those
 * threads). Stages of in-memory stores are typically already complete when returned.
 *
 * <h2>Guarantees every implementation gives</h2>
 * <ul>
 *   <li><b>Thread-safe.</b> Every method may be called concurrently from any thread, by any
 *       number of application instances sharing the same backing storage.</li>
 *   <li><b>Atomic acquire in one round trip.</b> For one {@code storeKey}, among any number of
 *       concurrent {@code acquire} calls at most one completes with
 *       {@link AcquireResult.Acquired}; the decision (absent, in progress, completed, expired
 *       lease, fingerprint mismatch) is made in a single operation against the backing
 *       storage.</li>
 *   <li><b>Fencing.</b> Each successful acquire returns a fencing token greater than every
 *       token issued before for that key. {@link #complete}, {@link #release} and
 *       {@link #renew} act only when the token still matches the record; otherwise they
 *       change nothing and complete with {@code false}.</li>
 *   <li><b>Expired leases.</b> An in-progress record whose lease has expired counts as absent:
 *       the next acquire takes it over (whatever its fingerprint) with a new token and reports
 *       {@link AcquireResult.Acquired#takeover()}.</li>
 *   <li><b>Late completion.</b> A holder whose lease expired but was not taken over can still
 *       {@link #complete} or {@link #release} with its token: nobody else ran the request, so its
 *       result is the one to keep. Only a takeover (a new token) fences it out.</li>
 *   <li><b>Retention.</b> A completed record is replayed until its retention ends; after that
 *       it counts as absent and the store eventually deletes it.</li>
 *   <li><b>Failure.</b> When the backing storage is unreachable, too slow or full, the stage
 *       completes exceptionally with {@link IdempotencyStoreException}; a store never guesses
 *       an answer. Only invalid arguments (nulls, non-positive durations), which are programming
 *       errors, throw at once.</li>
 * </ul>
 * The filter's keys are 64 lowercase hexadecimal digits, a SHA-256 of scope and key (never the
 * raw client key; see {@link #isDigestKey}). A store may use them verbatim in its storage keys or
 * keep them as their 32 bytes, but must keep any other string it is given (tests and other
 * callers pass such keys) as a key of its own that round-trips exactly. Fingerprints are
 * opaque byte strings of at most 64 bytes (the filter sends a version byte and 32 bytes of
 * SHA-256) that the store compares byte for byte.
 */
public interface IdempotencyStore {

    /** The length of the filter's store keys: 64 hexadecimal digits, the 32 bytes of a SHA-256. */
    int DIGEST_KEY_LENGTH = 64;

    /**
     * @param storeKey a store key
     * @return whether {@code storeKey} has the form of every key the filter makes, 64 lowercase
     *     hexadecimal digits, which a store may keep as their 32 bytes and print back exactly
     */
    static boolean isDigestKey(String storeKey) {
        if (storeKey.length() != DIGEST_KEY_LENGTH) {
            return false;
        }
        for (int i = 0; i < DIGEST_KEY_LENGTH; i++) {
            if (HexDigits.value(storeKey.charAt(i)) < 0) {
                return false;
            }
        }
        return true;
    }

    /**
     * Atomically looks up the record for {@code storeKey} and, when there is none (or its lease
     * has expired), creates an in-progress record holding {@code fingerprint} with a lease of
     * {@code lease}.
     *
     * @param storeKey    the fixed-length key of the record
     * @param fingerprint the request fingerprint, compared byte for byte
     * @param lease       how long the new in-progress record stays locked without renewal
     * @return what was found, see {@link AcquireResult}; failed with
     *     {@link IdempotencyStoreException} when the store cannot answer
     */
    CompletionStage<AcquireResult> acquire(String storeKey, byte[] fingerprint, Duration lease);

    /**
     * {@link #acquire(String, byte[], Duration)} that also keeps {@code traceparent}, the trace
     * context of the request that acquires, with the new in-progress record, so that a request
     * meeting it gets it back in {@link AcquireResult.InProgress#traceparent()} and a 409 links to
     * the run in progress (CONTRACT O4). The filter calls this one when tracing is on. The context
     * goes with the in-progress record: a takeover replaces it, a completion drops it (the
     * response keeps its own, {@link StoredResponse#traceparent()}).
     *
     * <p>The default ignores the trace context and calls the three-argument acquire: a store
     * that keeps none answers 409s without a link, and nothing else changes. The memory, Redis
     * and PostgreSQL stores keep it.
     *
     * @param traceparent a valid W3C {@code traceparent} (see {@link StoredResponse#validTraceparent}),
     *                    or {@code null} for none
     * @throws IllegalArgumentException when {@code traceparent} is not a valid one
     */
    default CompletionStage<AcquireResult> acquire(String storeKey, byte[] fingerprint, Duration lease,
                                                   @Nullable String traceparent) {
        checkTraceparent(traceparent);
        return acquire(storeKey, fingerprint, lease);
    }

    /**
     * @param traceparent a trace context to keep, or {@code null}
     * @throws IllegalArgumentException when it is neither {@code null} nor a valid {@code traceparent}
     */
    static void checkTraceparent(@Nullable String traceparent) {
        if (traceparent != null && !StoredResponse.validTraceparent(traceparent)) {
            throw new IllegalArgumentException("a traceparent must be 00-<32 hex>-<16 hex>-<2 hex>, lowercase, was \""
                + traceparent + "\"");
        }
    }

    /**
     * Stores the result of the request that holds {@code fencingToken} and turns the record
     * into a completed one, kept for {@code retention}.
     *
     * @return {@code true} when stored; {@code false} when the token no longer matches (the
     *     lease was taken over, or the record released) and nothing was changed; failed with
     *     {@link IdempotencyStoreException} when the store cannot answer
     */
    CompletionStage<Boolean> complete(String storeKey, long fencingToken, StoredResponse response, Duration retention);

    /**
     * Removes the in-progress record held with {@code fencingToken}, so that the next request
     * with the same key runs again.
     *
     * @return {@code true} when removed; {@code false} when the token did not match; failed
     *     with {@link IdempotencyStoreException} when the store cannot answer
     */
    CompletionStage<Boolean> release(String storeKey, long fencingToken);

    /**
     * Extends the lease of the in-progress record held with {@code fencingToken} to
     * {@code lease} from now.
     *
     * @return {@code true} when extended; {@code false} when the token no longer matches;
     *     failed with {@link IdempotencyStoreException} when the store cannot answer
     */
    CompletionStage<Boolean> renew(String storeKey, long fencingToken, Duration lease);

    /**
     * The durable steps recorded for {@code storeKey} (CONTRACT S23), by step name: every step
     * recorded by any holder of the record and not yet expired or discarded. Steps outlive the
     * record's release, so the execution after a released 5xx, a takeover or an expired lease
     * finds them.
     *
     * <p>The default fails at once: a store must say that it records steps by implementing the
     * three step methods. Every store of this project does.
     *
     * @param storeKey the record's key
     * @return the results as recorded, byte for byte, by step name (empty when there are none);
     *     failed with {@link IdempotencyStoreException} when the store cannot answer
     * @throws UnsupportedOperationException when the store does not record steps
     */
    default CompletionStage<Map<String, byte[]>> steps(String storeKey) {
        throw noSteps();
    }

    /**
     * Records the result of step {@code step} of the request that holds {@code fencingToken}.
     * Fenced like {@link #complete}: when the token does not hold the in-progress record (taken
     * over, released, completed, purged) nothing is written. A step is written once: when it is
     * already recorded, the first result stays and the answer is {@code true}. The step is kept
     * for {@code keep}, counted in the store's size and cost like a response, and dropped with
     * the record's key by {@link #discardSteps}.
     *
     * @param storeKey     the record's key
     * @param fencingToken the holder's token
     * @param step         the step's name, 1 to 200 characters
     * @param result       the encoded result; the store keeps these bytes exactly
     * @param keep         how long to keep it
     * @return {@code true} when recorded (now or before); {@code false} when fenced; failed with
     *     {@link IdempotencyStoreException} when the store cannot answer or has no room
     * @throws UnsupportedOperationException when the store does not record steps
     */
    default CompletionStage<Boolean> recordStep(String storeKey, long fencingToken, String step, byte[] result,
                                                Duration keep) {
        throw noSteps();
    }

    /**
     * Discards every step of {@code storeKey}, when {@code fencingToken} holds its in-progress
     * record: the operation was abandoned, and its next execution runs every step again.
     *
     * @return {@code true} when discarded (or there were none); {@code false} when fenced; failed
     *     with {@link IdempotencyStoreException} when the store cannot answer
     * @throws UnsupportedOperationException when the store does not record steps
     */
    default CompletionStage<Boolean> discardSteps(String storeKey, long fencingToken) {
        throw noSteps();
    }

    private UnsupportedOperationException noSteps() {
        return new UnsupportedOperationException(describe() + " does not record durable steps (CONTRACT S23):"
            + " IdempotentOperation.step needs a store that implements steps, recordStep and discardSteps,"
            + " such as the in-memory, Redis or PostgreSQL store");
    }

    /**
     * What this store is, with its main settings, in one line for the startup log and for
     * operators: e.g. {@code PostgreSQL table public.idempotency_records on datasource 'default'}.
     * Never credentials. The default names the class.
     *
     * @return a one-line description
     */
    default String describe() {
        return getClass().getName();
    }

    /**
     * A cheap check that the backing storage answers and is usable, for health indicators and
     * operators (CONTRACT O2): one round trip at most, never a write, never a record's content.
     * Completes with what it found (for example the in-memory store's fill level, or that a
     * table is present), or exceptionally with an {@link IdempotencyStoreException} saying why the
     * store cannot serve. Like every operation here it must not block. The default answers at
     * once with nothing found.
     *
     * @return details to report, keyed by name
     */
    default CompletionStage<Map<String, Object>> probe() {
        return CompletableFuture.completedFuture(Map.of());
    }
}
