package dev.idempotency.examples.payments;

import io.micronaut.context.ApplicationContext;
import io.micronaut.context.env.Environment;
import org.junit.jupiter.api.DisplayName;
import org.junit.jupiter.api.Test;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * The settings the README's run commands rely on, resolved as an environment would resolve them
 * (no beans are started, nothing is contacted). A default that holds ':' needs backticks in a
 * placeholder; without them Micronaut keeps only what follows the last ':'.
 */
class EnvironmentDefaultsTest {

    private static String resolved(String environment, String property) {
        try (ApplicationContext ctx = ApplicationContext.builder().environments(environment).build()) {
            Environment env = ctx.getEnvironment().start();
            try {
                return env.getProperty(property, String.class).orElse(null);
            } finally {
                env.stop();
            }
        }
    }

    private static String envOr(String name, String fallback) {
        String v = System.getenv(name);
        return v == null ? fallback : v;
    }

    @Test
    @DisplayName("S17/S18: the postgres environment: PostgreSQL store, transactional mode, POSTGRES_URL with a"
        + " working local default, a 1 s connection timeout")
    void postgresDefaults() {
        assertThat(resolved("postgres", "datasources.default.url"))
            .isEqualTo(envOr("POSTGRES_URL", "jdbc:postgresql://127.0.0.1:5432/test"));
        assertThat(resolved("postgres", "datasources.default.username")).isEqualTo(envOr("POSTGRES_USER", "postgres"));
        assertThat(resolved("postgres", "datasources.default.connection-timeout")).isEqualTo("1000");
        assertThat(resolved("postgres", "idempotency.store.type")).isEqualTo("postgres");
        assertThat(resolved("postgres", "idempotency.transactional")).isEqualTo("true");
        assertThat(resolved("postgres", "payments.postgres.schema"))
            .isEqualTo(resolved("postgres", "idempotency.store.postgres.schema"));
    }

    @Test
    @DisplayName("S17: the redis environment: REDIS_URI with a working local default")
    void redisDefaults() {
        assertThat(resolved("redis", "redis.uri")).isEqualTo(envOr("REDIS_URI", "redis://127.0.0.1:6379"));
        assertThat(resolved("redis", "idempotency.store.type")).isEqualTo("redis");
    }

    @Test
    @DisplayName("S17: no environment: the in-memory store, no datasource, no transactional mode")
    void defaultIsInMemory() {
        assertThat(resolved("test", "idempotency.store.type")).isEqualTo("memory");
        assertThat(resolved("test", "datasources.default.url")).isNull();
        assertThat(resolved("test", "idempotency.transactional")).isNull();
    }
}
