package dev.idempotency.store.postgres;

import dev.idempotency.store.tck.RollingRestartSuite;
import dev.idempotency.testsupport.TestStore;
import org.junit.jupiter.api.extension.RegisterExtension;

import java.util.Map;

/** A rolling restart of two instances on one PostgreSQL schema: requests in flight finish through a graceful shutdown. */
class PostgresRollingRestartTest extends RollingRestartSuite {

    @RegisterExtension
    static final TestStore STORE = TestStore.postgres();

    @Override
    protected Map<String, Object> storeProperties() {
        return STORE.properties();
    }
}
