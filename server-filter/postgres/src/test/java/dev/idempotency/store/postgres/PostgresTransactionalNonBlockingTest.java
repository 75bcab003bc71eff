package dev.idempotency.store.postgres;

import dev.idempotency.store.tck.NonBlockingFilterSuite;
import dev.idempotency.testsupport.TestPostgres;
import org.junit.jupiter.api.AfterAll;

import java.util.HashMap;
import java.util.Map;

/**
 * S17/S18: transactional mode on PostgreSQL blocks no event-loop thread either: each attempt's
 * transaction runs on the store's transactional island (BlockHound).
 */
class PostgresTransactionalNonBlockingTest extends NonBlockingFilterSuite {

    private static final String SCHEMA = TestPostgres.newSchema();

    @Override
    protected Map<String, Object> storeProperties() {
        Map<String, Object> p = new HashMap<>(TestPostgres.properties(TestPostgres.server(), SCHEMA));
        p.put("idempotency.transactional", "true");
        p.put("idempotency.store.postgres.lock-timeout", "200ms");
        return p;
    }

    @AfterAll
    static void dropSchema() {
        TestPostgres.dropSchema(SCHEMA);
    }
}
