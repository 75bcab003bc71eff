package dev.idempotency.store.postgres;

import org.flywaydb.core.Flyway;
import org.flywaydb.core.api.configuration.FluentConfiguration;

import javax.sql.DataSource;
import java.util.Map;
import java.util.function.Supplier;

/**
 * Applies the store's own Flyway migration ({@code classpath:db/idempotency}) once per
 * application: history table {@code <table>_schema_history}, placeholders {@code table} (qualified)
 * and {@code table_name}, baseline 0 so it also runs in a schema that already holds the
 * application's tables. Flyway serialises concurrent instances with an advisory lock; the
 * migration itself is idempotent ({@code IF NOT EXISTS}). A failure is retried on the next call.
 */
final class PostgresSchemaMigrator {

    static final String LOCATION = "classpath:db/idempotency";

    private final PostgresStoreConfiguration config;
    private final Supplier<DataSource> dataSource;
    private volatile boolean done;

    PostgresSchemaMigrator(PostgresStoreConfiguration config, Supplier<DataSource> dataSource) {
        this.config = config;
        this.dataSource = dataSource;
    }

    void ensure() {
        if (done) {
            return;
        }
        synchronized (this) {
            if (done) {
                return;
            }
            String table = config.getSchema() == null ? config.getTableName()
                : config.getSchema() + "." + config.getTableName();
            FluentConfiguration flyway = Flyway.configure(PostgresSchemaMigrator.class.getClassLoader())
                .dataSource(dataSource.get())
                .locations(LOCATION)
                .table(config.getTableName() + "_schema_history")
                .placeholders(Map.of("table", table, "table_name", config.getTableName()))
                .baselineOnMigrate(true)
                .baselineVersion("0")
                .connectRetries(0);
            if (config.getSchema() != null) {
                flyway.schemas(config.getSchema()).createSchemas(true);
            }
            flyway.load().migrate();
            done = true;
        }
    }
}
