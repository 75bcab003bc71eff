package dev.idempotency.store.redis;

import dev.idempotency.store.tck.RollingRestartSuite;
import dev.idempotency.testsupport.TestStore;
import org.junit.jupiter.api.extension.RegisterExtension;

import java.util.Map;

/** A rolling restart of two instances on one Redis: requests in flight finish through a graceful shutdown. */
class RedisRollingRestartTest extends RollingRestartSuite {

    @RegisterExtension
    static final TestStore STORE = TestStore.redis("rolling");

    @Override
    protected Map<String, Object> storeProperties() {
        return STORE.properties();
    }
}
