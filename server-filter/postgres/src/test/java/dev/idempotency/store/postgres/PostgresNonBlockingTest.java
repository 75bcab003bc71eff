package dev.idempotency.store.postgres;

import dev.idempotency.store.tck.NonBlockingFilterSuite;
import dev.idempotency.testsupport.TestStore;
import org.junit.jupiter.api.DisplayName;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

import java.util.Map;

/** S17: the filter on the PostgreSQL store blocks no event-loop thread (BlockHound). */
class PostgresNonBlockingTest extends NonBlockingFilterSuite {

    @RegisterExtension
    static final TestStore STORE = TestStore.postgres();

    @Override
    protected Map<String, Object> storeProperties() {
        return STORE.properties();
    }

    @Test
    @DisplayName("S23/S17: atomic phases (a transactional step and its record in one transaction, on the store's island) block no event loop")
    void atomicSteps() throws Exception {
        atomicStepsBlockNothing();
    }
}
