package dev.idempotency.client;

import dev.idempotency.server.store.AcquireResult;
import dev.idempotency.server.store.IdempotencyStore;
import dev.idempotency.server.store.StoredResponse;
import dev.idempotency.server.store.memory.InMemoryIdempotencyStore;
import io.micronaut.context.annotation.Replaces;
import io.micronaut.context.annotation.Requires;
import jakarta.inject.Singleton;

import java.time.Clock;
import java.time.Duration;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.ConcurrentHashMap;

/**
 * The real in-memory store, except that the renewals of the records named in {@link #cutOff}
 * never reach it, as from an instance cut off from its store: their holder runs on, its lease runs out, and
 * the next request takes the record over (CONTRACT S12), as after a crash.
 */
@Singleton
@Replaces(InMemoryIdempotencyStore.class)
@Requires(property = "spec.name", value = "DerivedKeysTest")
final class PartitionedRenewals implements IdempotencyStore {
    final Set<String> cutOff = ConcurrentHashMap.newKeySet();
    private final InMemoryIdempotencyStore delegate;

    PartitionedRenewals(Clock clock) {
        this.delegate = new InMemoryIdempotencyStore(clock, 100_000);
    }

    @Override
    public CompletionStage<AcquireResult> acquire(String storeKey, byte[] fingerprint, Duration lease) {
        return delegate.acquire(storeKey, fingerprint, lease);
    }

    @Override
    public CompletionStage<Boolean> complete(String storeKey, long fencingToken, StoredResponse response, Duration retention) {
        return delegate.complete(storeKey, fencingToken, response, retention);
    }

    @Override
    public CompletionStage<Boolean> release(String storeKey, long fencingToken) {
        return delegate.release(storeKey, fencingToken);
    }

    @Override
    public CompletionStage<Boolean> renew(String storeKey, long fencingToken, Duration lease) {
        if (cutOff.contains(storeKey)) {
            // never answered, as across a partition that drops packets (a failure would count
            // against the store's circuit and turn later requests into 503s)
            return new CompletableFuture<>();
        }
        return delegate.renew(storeKey, fencingToken, lease);
    }
}
