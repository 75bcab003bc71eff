package dev.idempotency.testsupport;

import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import java.util.concurrent.CopyOnWriteArrayList;

/**
 * The three idempotency stores, for the messaging modules' tests, as the properties of an application context on the tests' real
 * servers. Every schema and key prefix handed out is remembered, and {@link #removeCreated()}
 * takes them off the servers again, so a build leaves no test data behind.
 */
public enum Stores {
    MEMORY, REDIS, POSTGRES;

    private static final List<String> SCHEMAS = new CopyOnWriteArrayList<>();
    private static final List<String> PREFIXES = new CopyOnWriteArrayList<>();

    /** @return the properties that select this store (a fresh schema or key prefix each time) */
    public Map<String, Object> properties() {
        Map<String, Object> p = new HashMap<>();
        switch (this) {
            case MEMORY -> p.put("idempotency.store.redis.enabled", "false");
            case REDIS -> {
                String prefix = "test-" + UUID.randomUUID() + ":";
                PREFIXES.add(prefix);
                p.put("redis.uri", TestRedis.uri());
                p.put("idempotency.store.redis.key-prefix", prefix);
            }
            case POSTGRES -> {
                String schema = TestPostgres.newSchema();
                SCHEMAS.add(schema);
                p.putAll(TestPostgres.properties(TestPostgres.server(), schema));
                p.put("idempotency.store.redis.enabled", "false");
            }
        }
        return p;
    }

    /** Drops the schemas and deletes the keys handed out so far; call once their contexts are closed. */
    public static void removeCreated() {
        for (String schema : SCHEMAS) {
            TestPostgres.dropSchema(schema);
            SCHEMAS.remove(schema);
        }
        for (String prefix : PREFIXES) {
            TestRedis.deleteKeys(prefix);
            PREFIXES.remove(prefix);
        }
    }
}
