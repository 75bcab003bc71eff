package dev.idempotency.store.postgres;

import ch.qos.logback.classic.Level;
import dev.idempotency.server.http.IdempotencyFilter;
import dev.idempotency.server.store.IdempotencyStore;
import dev.idempotency.server.store.memory.InMemoryIdempotencyStore;
import dev.idempotency.store.redis.RedisIdempotencyStore;
import dev.idempotency.testsupport.LogCapture;
import dev.idempotency.testsupport.TestPostgres;
import dev.idempotency.testsupport.TestRedis;
import io.micronaut.context.ApplicationContext;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.DisplayName;
import org.junit.jupiter.api.Test;

import java.util.HashMap;
import java.util.List;
import java.util.Map;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/**
 * O1: one rule picks the store when both store modules are on the classpath (as here: Redis is
 * a test dependency of this module). {@code idempotency.store.type} decides alone; without it the
 * modules' {@code enabled} settings do, and two active stores stop the start in the library's
 * words; the store in use is named in one INFO line.
 */
class StoreSelectionTest {

    private static String schema;

    @BeforeAll
    static void schema() {
        schema = TestPostgres.newSchema();
    }

    @AfterAll
    static void drop() {
        TestPostgres.dropSchema(schema);
    }

    /** Both stores configurable: a datasource and a Redis URI, and no selection. */
    private static Map<String, Object> both() {
        Map<String, Object> p = new HashMap<>(TestPostgres.properties(TestPostgres.server(), schema));
        p.remove("idempotency.store.type");
        p.put("redis.uri", TestRedis.uri());
        return p;
    }

    private static Map<String, Object> with(Map<String, Object> base, Object... kv) {
        Map<String, Object> p = new HashMap<>(base);
        for (int i = 0; i < kv.length; i += 2) {
            p.put((String) kv[i], kv[i + 1]);
        }
        return p;
    }

    @Test
    @DisplayName("O1: two active stores stop the start with a message that names both and the setting that chooses")
    void twoStoresFailInOurWords() {
        // the situation of the adoption report: both jars, Redis on by default, PostgreSQL switched on
        assertThatThrownBy(() -> ApplicationContext.run(with(both(), "idempotency.store.postgres.enabled", "true")))
            .hasStackTraceContaining("2 idempotency stores are active")
            .hasStackTraceContaining(RedisIdempotencyStore.class.getName())
            .hasStackTraceContaining(PostgresIdempotencyStore.class.getName())
            .hasStackTraceContaining("Choose one with idempotency.store.type (memory, redis or postgres)");
    }

    @Test
    @DisplayName("O1: idempotency.store.type picks the store whatever else is on the classpath or enabled, and the INFO line"
        + " names it and says whether the instance shuts down gracefully")
    void typeDecidesAlone() {
        List<String> lines;
        try (LogCapture log = LogCapture.of(IdempotencyFilter.LOG_CATEGORY, Level.INFO).start()) {
            try (ApplicationContext ctx = ApplicationContext.run(with(both(), "idempotency.store.type", "postgres",
                "idempotency.store.redis.enabled", "true"))) {
                assertThat(ctx.getBean(IdempotencyStore.class)).isInstanceOf(PostgresIdempotencyStore.class);
            }
            try (ApplicationContext ctx = ApplicationContext.run(with(both(), "idempotency.store.type", " Redis ",
                "idempotency.store.postgres.enabled", "true"))) {
                assertThat(ctx.getBean(IdempotencyStore.class)).isInstanceOf(RedisIdempotencyStore.class);
            }
            try (ApplicationContext ctx = ApplicationContext.run(with(both(), "idempotency.store.type", "memory",
                "idempotency.store.postgres.enabled", "true", "micronaut.lifecycle.graceful-shutdown.enabled", "true",
                "micronaut.lifecycle.graceful-shutdown.grace-period", "20s"))) {
                assertThat(ctx.getBean(IdempotencyStore.class)).isInstanceOf(InMemoryIdempotencyStore.class);
            }
            lines = log.lines(Level.INFO, "idempotency store: ");
        }
        assertThat(lines).hasSize(3);
        assertThat(lines.get(0)).contains("PostgreSQL table " + schema + ".idempotency_records on datasource 'default'")
            .contains("; lease 30s, retention 24h")
            .endsWith("; graceful shutdown off (set micronaut.lifecycle.graceful-shutdown.enabled=true, or requests"
                + " running when this instance stops are cut off and a retry may run them again)");
        assertThat(lines.get(1)).startsWith("idempotency store: Redis at ").contains("keys idempotency:{...}")
            .doesNotContain("password");
        assertThat(lines.get(2)).startsWith("idempotency store: in memory, this instance only, up to 100000 records")
            .endsWith("; graceful shutdown, grace period 20s");
    }

    @Test
    @DisplayName("O1: without a type the enabled settings decide: Redis on by default, PostgreSQL when enabled and Redis is off")
    void enabledSettingsWithoutType() {
        try (ApplicationContext ctx = ApplicationContext.run(both())) {
            assertThat(ctx.getBean(IdempotencyStore.class)).isInstanceOf(RedisIdempotencyStore.class);
        }
        try (ApplicationContext ctx = ApplicationContext.run(with(both(), "idempotency.store.redis.enabled", "false",
            "idempotency.store.postgres.enabled", "true"))) {
            assertThat(ctx.getBean(IdempotencyStore.class)).isInstanceOf(PostgresIdempotencyStore.class);
        }
    }

    @Test
    @DisplayName("O1: a type that names no store stops the start and lists the ones there are")
    void unknownType() {
        assertThatThrownBy(() -> ApplicationContext.run(with(both(), "idempotency.store.type", "postgresql")))
            .hasStackTraceContaining("idempotency.store.type=postgresql names no store: use memory, redis or postgres");
    }
}
