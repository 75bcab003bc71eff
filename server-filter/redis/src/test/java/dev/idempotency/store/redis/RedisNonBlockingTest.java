package dev.idempotency.store.redis;

import dev.idempotency.store.tck.NonBlockingFilterSuite;
import dev.idempotency.testsupport.TestStore;
import org.junit.jupiter.api.extension.RegisterExtension;

import java.util.Map;

/**
 * S17: the filter on the Redis store blocks no event-loop thread, neither the HTTP server's nor
 * Lettuce's (BlockHound).
 */
class RedisNonBlockingTest extends NonBlockingFilterSuite {

    @RegisterExtension
    static final TestStore STORE = TestStore.redis("nonblocking");

    @Override
    protected Map<String, Object> storeProperties() {
        return STORE.properties();
    }
}
