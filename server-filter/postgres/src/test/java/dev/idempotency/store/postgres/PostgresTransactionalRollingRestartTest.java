package dev.idempotency.store.postgres;

import dev.idempotency.store.tck.RollingRestartSuite;
import dev.idempotency.testsupport.TestPostgres;
import org.junit.jupiter.api.AfterAll;

import java.util.HashMap;
import java.util.Map;

/**
 * A rolling restart in transactional mode (S18) on one PostgreSQL schema: a request whose
 * transaction is open when its instance shuts down gracefully commits it before the instance goes;
 * without graceful shutdown the transaction is lost with the instance and a retry runs again.
 */
class PostgresTransactionalRollingRestartTest extends RollingRestartSuite {

    private static final String SCHEMA = TestPostgres.newSchema();

    @Override
    protected Map<String, Object> storeProperties() {
        Map<String, Object> p = new HashMap<>(TestPostgres.properties(TestPostgres.server(), SCHEMA));
        p.put("idempotency.transactional", "true");
        return p;
    }

    @Override
    protected boolean transactional() {
        return true;
    }

    @AfterAll
    static void dropSchema() {
        TestPostgres.dropSchema(SCHEMA);
    }
}
