package dev.idempotency.server;

import dev.idempotency.server.store.AcquireResult;
import dev.idempotency.server.store.IdempotencyStore;
import dev.idempotency.server.store.memory.InMemoryIdempotencyStore;
import dev.idempotency.server.store.StoredResponse;

import java.time.Duration;
import java.util.concurrent.CompletionStage;

/**
 * A test store that passes every call to an in-memory store: tests override the calls they make
 * fail, slow or count, and leave the rest to the real store.
 */
public abstract class InMemoryBackedStore implements IdempotencyStore {

    /** The real store behind this one. */
    public final InMemoryIdempotencyStore delegate;

    protected InMemoryBackedStore(InMemoryIdempotencyStore delegate) {
        this.delegate = delegate;
    }

    @Override
    public CompletionStage<AcquireResult> acquire(String storeKey, byte[] fingerprint, Duration lease) {
        return delegate.acquire(storeKey, fingerprint, lease);
    }

    @Override
    public CompletionStage<Boolean> complete(String storeKey, long fencingToken, StoredResponse response,
                                             Duration retention) {
        return delegate.complete(storeKey, fencingToken, response, retention);
    }

    @Override
    public CompletionStage<Boolean> release(String storeKey, long fencingToken) {
        return delegate.release(storeKey, fencingToken);
    }

    @Override
    public CompletionStage<Boolean> renew(String storeKey, long fencingToken, Duration lease) {
        return delegate.renew(storeKey, fencingToken, lease);
    }

    @Override
    public CompletionStage<java.util.Map<String, byte[]>> steps(String storeKey) {
        return delegate.steps(storeKey);
    }

    @Override
    public CompletionStage<Boolean> recordStep(String storeKey, long fencingToken, String step, byte[] result,
                                               Duration keep) {
        return delegate.recordStep(storeKey, fencingToken, step, result, keep);
    }

    @Override
    public CompletionStage<Boolean> discardSteps(String storeKey, long fencingToken) {
        return delegate.discardSteps(storeKey, fencingToken);
    }
}
