package dev.idempotency.store.tck;

import static org.assertj.core.api.Assertions.assertThat;

import dev.idempotency.server.store.IdempotencyStore;
import dev.idempotency.server.store.memory.InMemoryIdempotencyStore;
import dev.idempotency.testsupport.Http;
import org.junit.jupiter.api.DisplayName;
import org.junit.jupiter.api.Test;

import java.util.Map;
import java.util.UUID;

/**
 * S17: the filter on an in-memory store at its bound (64 records) blocks no event-loop thread
 * (BlockHound): every test of the suite, and the one below, makes new keys past the bound, so
 * the store counts, evicts and checks its bounds on the event loops as a full store does.
 */
class InMemoryFullNonBlockingTest extends NonBlockingFilterSuite {

    private static final int MAX_ENTRIES = 64;

    @Override
    protected Map<String, Object> storeProperties() {
        return Map.of("idempotency.store.memory.max-entries", MAX_ENTRIES);
    }

    @Test
    @DisplayName("S17: new keys past the in-memory store's bound evict completed records without blocking")
    void evictsWithoutBlocking() {
        Http http = new Http(server().getURI());
        for (int i = 0; i < 4 * MAX_ENTRIES; i++) {
            assertThat(http.postJson("/nb/blocking", "\"" + UUID.randomUUID() + "\"", "{}").statusCode())
                .isIn(200, 201);
        }
        IdempotencyStore store = server().getApplicationContext().getBean(IdempotencyStore.class);
        assertThat(store).isInstanceOfSatisfying(InMemoryIdempotencyStore.class,
            s -> assertThat(s.size()).as("records held after %d new keys", 4 * MAX_ENTRIES).isLessThanOrEqualTo(MAX_ENTRIES));
    }
}
