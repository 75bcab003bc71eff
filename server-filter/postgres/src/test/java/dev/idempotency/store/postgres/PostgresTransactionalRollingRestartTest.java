package dev.idempotency.store.postgres;

import dev.idempotency.store.tck.RollingRestartSuite;
import dev.idempotency.testsupport.TestStore;
import org.junit.jupiter.api.extension.RegisterExtension;

import java.util.Map;

/**
 * A rolling restart in transactional mode (S18) on one PostgreSQL schema: a request whose
 * transaction is open when its instance shuts down gracefully commits it before the instance goes;
 * without graceful shutdown the transaction is lost with the instance and a retry runs again.
 */
class PostgresTransactionalRollingRestartTest extends RollingRestartSuite {

    @RegisterExtension
    static final TestStore STORE = TestStore.postgres().with("idempotency.transactional", "true");

    @Override
    protected Map<String, Object> storeProperties() {
        return STORE.properties();
    }

    @Override
    protected boolean transactional() {
        return true;
    }
}
