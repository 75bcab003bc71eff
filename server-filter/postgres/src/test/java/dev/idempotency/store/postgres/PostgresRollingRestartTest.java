package dev.idempotency.store.postgres;

import dev.idempotency.store.tck.RollingRestartSuite;
import dev.idempotency.testsupport.TestPostgres;
import org.junit.jupiter.api.AfterAll;

import java.util.Map;

/** A rolling restart of two instances on one PostgreSQL schema: requests in flight finish through a graceful shutdown. */
class PostgresRollingRestartTest extends RollingRestartSuite {

    private static final String SCHEMA = TestPostgres.newSchema();

    @Override
    protected Map<String, Object> storeProperties() {
        return TestPostgres.properties(TestPostgres.server(), SCHEMA);
    }

    @AfterAll
    static void dropSchema() {
        TestPostgres.dropSchema(SCHEMA);
    }
}
