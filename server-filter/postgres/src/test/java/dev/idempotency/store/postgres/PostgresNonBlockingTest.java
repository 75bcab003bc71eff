package dev.idempotency.store.postgres;

import dev.idempotency.store.tck.NonBlockingFilterSuite;
import dev.idempotency.testsupport.TestStore;
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
}
