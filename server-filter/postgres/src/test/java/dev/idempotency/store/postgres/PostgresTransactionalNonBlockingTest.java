package dev.idempotency.store.postgres;

import dev.idempotency.store.tck.NonBlockingFilterSuite;
import dev.idempotency.testsupport.TestStore;
import org.junit.jupiter.api.DisplayName;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

import java.util.Map;

/**
 * S17/S18: transactional mode on PostgreSQL blocks no event-loop thread either: each attempt's
 * transaction runs on the store's transactional island (BlockHound).
 */
class PostgresTransactionalNonBlockingTest extends NonBlockingFilterSuite {

    @RegisterExtension
    static final TestStore STORE = TestStore.postgres().with("idempotency.transactional", "true")
        .with("idempotency.store.postgres.lock-timeout", "200ms");

    @Override
    protected Map<String, Object> storeProperties() {
        return STORE.properties();
    }

    @Test
    @DisplayName("S23/S18/S17: atomic phases inside the attempt's transaction (off the event loop) block no event loop")
    void atomicSteps() throws Exception {
        atomicStepsBlockNothing();
    }
}
