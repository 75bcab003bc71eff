package dev.idempotency.server;

import dev.idempotency.server.store.AcquireResult;
import dev.idempotency.server.store.memory.InMemoryIdempotencyStore;
import dev.idempotency.testsupport.Await;
import dev.idempotency.testsupport.MutableClock;
import io.micronaut.context.annotation.Property;
import io.micronaut.test.extensions.junit5.annotation.MicronautTest;
import jakarta.inject.Inject;
import org.junit.jupiter.api.DisplayName;
import org.junit.jupiter.api.Test;

import java.time.Duration;
import java.util.UUID;

import static org.assertj.core.api.Assertions.assertThat;

/** The in-memory store's scheduled purge (S16), on a short schedule and a fake clock. */
@MicronautTest(startApplication = false)
@Property(name = "spec.name", value = "InMemoryScheduledPurgeTest")
@Property(name = "idempotency.store.memory.purge-interval", value = "100ms")
class InMemoryScheduledPurgeTest {

    @Inject
    MutableClock clock;
    @Inject
    InMemoryIdempotencyStore store;

    @Test
    @DisplayName("S16: the in-memory store purges expired records on its schedule")
    void scheduledPurge() throws Exception {
        String storeKey = "purge-" + UUID.randomUUID();
        byte[] fp = new byte[32];
        assertThat(store.acquire(storeKey, fp, Duration.ofSeconds(5)).toCompletableFuture().join())
            .isInstanceOf(AcquireResult.Acquired.class);
        clock.advance(Duration.ofSeconds(6));
        int before = store.size();
        Await.until("the scheduled purge removed the expired record", Duration.ofSeconds(10),
            () -> store.size() < before);
        // purged, not merely expired: a new acquire is a fresh record, not a takeover
        AcquireResult again = store.acquire(storeKey, fp, Duration.ofSeconds(5)).toCompletableFuture().join();
        assertThat(again).isInstanceOf(AcquireResult.Acquired.class);
        assertThat(((AcquireResult.Acquired) again).takeover()).isFalse();
    }
}
