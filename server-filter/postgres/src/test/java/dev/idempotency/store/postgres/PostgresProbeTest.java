package dev.idempotency.store.postgres;

import dev.idempotency.server.store.IdempotencyStore;
import dev.idempotency.server.store.IdempotencyStoreException;
import dev.idempotency.testsupport.TestPostgres;
import io.micronaut.context.ApplicationContext;
import org.junit.jupiter.api.DisplayName;
import org.junit.jupiter.api.Test;

import java.util.HashMap;
import java.util.Map;
import java.util.concurrent.CompletionException;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/** O2: the PostgreSQL store's probe, which the /health indicator reports: reachable, table present. */
class PostgresProbeTest {

    @Test
    @DisplayName("O2: the probe reads the table: present once migrated, a clear failure when it is missing")
    void tablePresentOrMissing() {
        String schema = TestPostgres.newSchema();
        try {
            Map<String, Object> unmigrated = new HashMap<>(TestPostgres.properties(TestPostgres.server(), schema));
            unmigrated.put("idempotency.store.postgres.migrate", "false");
            try (ApplicationContext ctx = ApplicationContext.run(unmigrated)) {
                IdempotencyStore store = ctx.getBean(IdempotencyStore.class);
                assertThatThrownBy(() -> store.probe().toCompletableFuture().join())
                    .isInstanceOf(CompletionException.class)
                    .hasCauseInstanceOf(IdempotencyStoreException.class)
                    .hasMessageContaining(schema + ".idempotency_records does not exist");
            }
            try (ApplicationContext ctx = ApplicationContext.run(TestPostgres.properties(TestPostgres.server(), schema))) {
                IdempotencyStore store = ctx.getBean(IdempotencyStore.class);
                assertThat(store.probe().toCompletableFuture().join())
                    .containsEntry("table", schema + ".idempotency_records").containsEntry("tablePresent", true);
            }
        } finally {
            TestPostgres.dropSchema(schema);
        }
    }
}
