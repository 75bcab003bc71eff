package dev.idempotency.testsupport;

import org.junit.jupiter.api.extension.AfterAllCallback;
import org.junit.jupiter.api.extension.ExtensionContext;

import java.util.HashMap;
import java.util.Map;

/**
 * The shared store one test class runs the filter on, in a place of its own: the Micronaut
 * properties that select it, and the removal of that place (its Redis keys, its PostgreSQL schema)
 * after the class. Register it as a static field with {@code @RegisterExtension}; immutable.
 */
public final class TestStore implements AfterAllCallback {

    private final Map<String, Object> properties;
    private final Runnable cleanUp;

    private TestStore(Map<String, Object> properties, Runnable cleanUp) {
        this.properties = Map.copyOf(properties);
        this.cleanUp = cleanUp;
    }

    /** The shared test Redis, under a key prefix of its own ({@link TestRedis#uniquePrefix}). */
    public static TestStore redis(String test) {
        String prefix = TestRedis.uniquePrefix(test);
        return new TestStore(Map.of("redis.uri", TestRedis.uri(), "idempotency.store.redis.key-prefix", prefix),
            () -> TestRedis.deleteKeys(prefix));
    }

    /** The shared test PostgreSQL, in a new schema of its own. */
    public static TestStore postgres() {
        String schema = TestPostgres.newSchema();
        return new TestStore(TestPostgres.properties(TestPostgres.server(), schema),
            () -> TestPostgres.dropSchema(schema));
    }

    /** @return the same store, with one more property (the store's place and cleanup unchanged) */
    public TestStore with(String name, Object value) {
        Map<String, Object> more = new HashMap<>(properties);
        more.put(name, value);
        return new TestStore(more, cleanUp);
    }

    /** @return the properties that select this store */
    public Map<String, Object> properties() {
        return properties;
    }

    @Override
    public void afterAll(ExtensionContext context) {
        cleanUp.run();
    }
}
