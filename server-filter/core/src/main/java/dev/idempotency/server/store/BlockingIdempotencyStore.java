package dev.idempotency.server.store;

import io.micronaut.core.annotation.Nullable;

import java.time.Duration;
import java.util.Map;

/**
 * A store written against a client library that can only block (a JDBC driver of its own, a
 * synchronous key-value client). It makes the same promises as {@link IdempotencyStore}, one
 * method for one, except that each call blocks until the backing storage answered and store
 * failures are thrown as {@link IdempotencyStoreException}.
 *
 * <p>The filter never calls it directly: wrap it in a {@link BlockingStoreAdapter}, which runs
 * every call on a bounded executor of its own. Declaring a bean of this type is enough: the
 * filter then wraps it (settings {@code idempotency.store.blocking.threads} and
 * {@code idempotency.store.blocking.queue-capacity}) and uses it instead of the in-memory store.
 *
 * @see IdempotencyStore for the guarantees (thread safety, atomic acquire, fencing, leases,
 *     late completion, retention, failure)
 */
public interface BlockingIdempotencyStore {

    /**
     * {@link IdempotencyStore#acquire}, blocking.
     *
     * @param storeKey    the fixed-length key of the record
     * @param fingerprint the request fingerprint, compared byte for byte
     * @param lease       how long the new in-progress record stays locked without renewal
     * @return what was found
     * @throws IdempotencyStoreException when the store cannot answer
     */
    AcquireResult acquire(String storeKey, byte[] fingerprint, Duration lease);

    /**
     * {@link IdempotencyStore#acquire(String, byte[], Duration, String)}, blocking: keeps the
     * acquiring request's trace context with the in-progress record. The default ignores it.
     *
     * @param traceparent a valid W3C {@code traceparent}, or {@code null} for none
     * @return what was found
     * @throws IdempotencyStoreException when the store cannot answer
     */
    default AcquireResult acquire(String storeKey, byte[] fingerprint, Duration lease, @Nullable String traceparent) {
        IdempotencyStore.checkTraceparent(traceparent);
        return acquire(storeKey, fingerprint, lease);
    }

    /**
     * {@link IdempotencyStore#complete}, blocking.
     *
     * @return {@code true} when stored, {@code false} when the token no longer matches
     * @throws IdempotencyStoreException when the store cannot answer
     */
    boolean complete(String storeKey, long fencingToken, StoredResponse response, Duration retention);

    /**
     * {@link IdempotencyStore#release}, blocking.
     *
     * @return {@code true} when removed, {@code false} when the token did not match
     * @throws IdempotencyStoreException when the store cannot answer
     */
    boolean release(String storeKey, long fencingToken);

    /**
     * {@link IdempotencyStore#renew}, blocking.
     *
     * @return {@code true} when extended, {@code false} when the token no longer matches
     * @throws IdempotencyStoreException when the store cannot answer
     */
    boolean renew(String storeKey, long fencingToken, Duration lease);

    /**
     * {@link IdempotencyStore#steps}, blocking. The default throws: a store records steps by
     * implementing the three step methods.
     *
     * @throws IdempotencyStoreException when the store cannot answer
     */
    default Map<String, byte[]> steps(String storeKey) {
        throw new UnsupportedOperationException(getClass().getName() + " does not record durable steps (CONTRACT S23)");
    }

    /**
     * {@link IdempotencyStore#recordStep}, blocking.
     *
     * @return {@code true} when recorded (now or before), {@code false} when fenced
     * @throws IdempotencyStoreException when the store cannot answer or has no room
     */
    default boolean recordStep(String storeKey, long fencingToken, String step, byte[] result, Duration keep) {
        throw new UnsupportedOperationException(getClass().getName() + " does not record durable steps (CONTRACT S23)");
    }

    /**
     * {@link IdempotencyStore#discardSteps}, blocking.
     *
     * @return {@code true} when discarded, {@code false} when fenced
     * @throws IdempotencyStoreException when the store cannot answer
     */
    default boolean discardSteps(String storeKey, long fencingToken) {
        throw new UnsupportedOperationException(getClass().getName() + " does not record durable steps (CONTRACT S23)");
    }
}
