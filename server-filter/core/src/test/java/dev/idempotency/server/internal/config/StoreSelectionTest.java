package dev.idempotency.server.internal.config;

import dev.idempotency.server.store.IdempotencyStore;
import dev.idempotency.server.store.memory.InMemoryIdempotencyStore;
import io.micronaut.context.ApplicationContext;
import org.junit.jupiter.api.DisplayName;
import org.junit.jupiter.api.Test;

import java.util.Map;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/** O1: the store selection with only the filter module on the classpath. */
class StoreSelectionTest {

    @Test
    @DisplayName("O1: no store module and no type: the in-memory store; type=memory says the same")
    void memoryByDefault() {
        try (ApplicationContext ctx = ApplicationContext.run()) {
            assertThat(ctx.getBean(IdempotencyStore.class)).isInstanceOf(InMemoryIdempotencyStore.class);
            assertThat(ctx.getBean(IdempotencyStore.class).describe()).isEqualTo(
                "in memory, this instance only, up to 100000 records and 64 MiB");
        }
        try (ApplicationContext ctx = ApplicationContext.run(Map.of("idempotency.store.type", "memory"))) {
            assertThat(ctx.getBean(IdempotencyStore.class)).isInstanceOf(InMemoryIdempotencyStore.class);
        }
    }

    @Test
    @DisplayName("O1: a type whose module is missing stops the start and names the dependency to add")
    void missingModule() {
        assertThatThrownBy(() -> ApplicationContext.run(Map.of("idempotency.store.type", "redis")))
            .hasStackTraceContaining("idempotency.store.type=redis, but that store is not on the classpath: add the"
                + " dependency dev.idempotency:idempotency-store-redis");
        assertThatThrownBy(() -> ApplicationContext.run(Map.of("idempotency.store.type", "postgres")))
            .hasStackTraceContaining("dev.idempotency:idempotency-store-postgres");
    }
}
