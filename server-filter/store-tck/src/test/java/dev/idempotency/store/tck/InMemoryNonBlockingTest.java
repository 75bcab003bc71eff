package dev.idempotency.store.tck;

import java.util.Map;

/** S17: the filter on the in-memory store blocks no event-loop thread (BlockHound). */
class InMemoryNonBlockingTest extends NonBlockingFilterSuite {

    @Override
    protected Map<String, Object> storeProperties() {
        return Map.of();
    }
}
