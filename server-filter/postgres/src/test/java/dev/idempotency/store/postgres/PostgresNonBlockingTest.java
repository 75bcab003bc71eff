package dev.idempotency.store.postgres;

import dev.idempotency.store.tck.NonBlockingFilterSuite;
import dev.idempotency.testsupport.TestPostgres;
import org.junit.jupiter.api.AfterAll;

import java.util.Map;

/** S17: the filter on the PostgreSQL store blocks no event-loop thread (BlockHound). */
class PostgresNonBlockingTest extends NonBlockingFilterSuite {

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
