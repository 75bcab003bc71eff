package dev.idempotency.rabbitmq;

import dev.idempotency.testsupport.TestPostgres;
import dev.idempotency.testsupport.TestRedis;

import java.util.HashMap;
import java.util.Map;
import java.util.UUID;

/** The three idempotency stores, as the properties of an application context on the tests' real servers. */
enum Stores {
    MEMORY, REDIS, POSTGRES;

    /** @return the properties that select this store (a fresh schema or key prefix each time) */
    Map<String, Object> properties() {
        Map<String, Object> p = new HashMap<>();
        switch (this) {
            case MEMORY -> p.put("idempotency.store.redis.enabled", "false");
            case REDIS -> {
                p.put("redis.uri", TestRedis.uri());
                p.put("idempotency.store.redis.key-prefix", "rabbit-" + UUID.randomUUID() + ":");
            }
            case POSTGRES -> {
                p.putAll(TestPostgres.properties(TestPostgres.server(), TestPostgres.newSchema()));
                p.put("idempotency.store.redis.enabled", "false");
            }
        }
        return p;
    }
}
