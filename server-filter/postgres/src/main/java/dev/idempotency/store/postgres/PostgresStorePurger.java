package dev.idempotency.store.postgres;

import io.micronaut.context.annotation.Requires;
import io.micronaut.scheduling.annotation.Scheduled;
import jakarta.inject.Singleton;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Deletes expired records on a schedule (CONTRACT S16): every
 * {@code idempotency.store.postgres.purge-interval} (default 10s), in batches of
 * {@code purge-batch-size}, at most {@code purge-max-batches} per run. Runs on every instance;
 * the batches skip rows another instance's purge holds ({@code FOR UPDATE SKIP LOCKED}), so
 * instances share the work instead of blocking each other. Off with
 * {@code idempotency.store.postgres.purge-enabled=false}.
 */
@Singleton
@Requires(beans = PostgresIdempotencyStore.class)
@Requires(property = PostgresStoreConfigurationProperties.PREFIX + ".purge-enabled", notEquals = "false")
final class PostgresStorePurger {

    private static final Logger LOG = LoggerFactory.getLogger(PostgresStorePurger.class);

    private final PostgresIdempotencyStore store;

    PostgresStorePurger(PostgresIdempotencyStore store) {
        this.store = store;
    }

    @Scheduled(fixedDelay = "${" + PostgresStoreConfigurationProperties.PREFIX + ".purge-interval:10s}",
        initialDelay = "${" + PostgresStoreConfigurationProperties.PREFIX + ".purge-interval:10s}")
    void purge() {
        try {
            int removed = store.purgeExpired();
            if (removed > 0 && LOG.isDebugEnabled()) {
                LOG.debug("idempotency purged {} expired PostgreSQL records", removed);
            }
        } catch (RuntimeException e) {
            LOG.warn("idempotency purge of expired PostgreSQL records failed, will retry next run: {}", e.toString());
        }
    }
}
