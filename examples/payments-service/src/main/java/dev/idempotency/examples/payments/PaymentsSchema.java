package dev.idempotency.examples.payments;

import io.micronaut.context.annotation.Requires;
import io.micronaut.context.annotation.Value;
import io.micronaut.context.event.StartupEvent;
import io.micronaut.core.annotation.Nullable;
import io.micronaut.data.connection.jdbc.advice.DelegatingDataSource;
import io.micronaut.runtime.event.annotation.EventListener;
import jakarta.inject.Singleton;
import org.flywaydb.core.Flyway;
import org.flywaydb.core.api.configuration.FluentConfiguration;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import javax.sql.DataSource;
import java.util.regex.Pattern;

/**
 * The {@code postgres} environment's business tables ({@code payments}, {@code payment_refunds},
 * {@code payment_side_effects}): created by the Flyway migration
 * {@code classpath:db/payments/V1__payments.sql}, history table {@code payments_schema_history}
 * (apart from the idempotency store's own migration and history), in the schema
 * {@code payments.postgres.schema} (created when missing; none: the connection's current schema).
 *
 * <p>Applied at startup; when the database is down then, the service starts anyway and the
 * migration is retried before the next database access, so it recovers by itself.
 */
@Singleton
@Requires(env = "postgres")
@Requires(beans = DataSource.class)
final class PaymentsSchema {

    private static final Logger LOG = LoggerFactory.getLogger(PaymentsSchema.class);
    private static final Pattern IDENTIFIER = Pattern.compile("[a-z_][a-z0-9_]{0,39}");

    private final DataSource dataSource;
    @Nullable
    private final String schema;
    private volatile boolean done;

    PaymentsSchema(DataSource dataSource, @Nullable @Value("${payments.postgres.schema:}") String schema) {
        // Flyway needs plain pooled connections, not the transaction-bound proxy
        this.dataSource = DelegatingDataSource.unwrapDataSource(dataSource);
        if (schema != null && !schema.isBlank() && !IDENTIFIER.matcher(schema).matches()) {
            throw new IllegalArgumentException("payments.postgres.schema must be a lower-case SQL identifier"
                + " ([a-z_][a-z0-9_]*, at most 40 characters), was " + schema);
        }
        this.schema = schema == null || schema.isBlank() ? null : schema;
    }

    /** @return {@code table}, qualified with the configured schema when there is one */
    String table(String table) {
        return schema == null ? table : schema + "." + table;
    }

    @EventListener
    void migrateOnStartup(StartupEvent event) {
        try {
            ensure();
        } catch (RuntimeException e) {
            LOG.warn("payments schema migration failed at startup, will retry on first use: {}", e.toString());
        }
    }

    /** Applies the migration once; a failure is retried on the next call. */
    void ensure() {
        if (done) {
            return;
        }
        synchronized (this) {
            if (done) {
                return;
            }
            FluentConfiguration flyway = Flyway.configure(PaymentsSchema.class.getClassLoader())
                .dataSource(dataSource)
                .locations("classpath:db/payments")
                .table("payments_schema_history")
                // the schema may already hold the idempotency store's table
                .baselineOnMigrate(true)
                .baselineVersion("0")
                .connectRetries(0);
            if (schema != null) {
                flyway.schemas(schema).createSchemas(true);
            }
            flyway.load().migrate();
            done = true;
        }
    }
}
