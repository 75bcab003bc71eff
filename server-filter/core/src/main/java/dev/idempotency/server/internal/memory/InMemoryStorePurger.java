package dev.idempotency.server.internal.memory;

import dev.idempotency.server.IdempotencyConfigurationProperties;
import dev.idempotency.server.store.IdempotencyStore;
import dev.idempotency.server.store.memory.InMemoryIdempotencyStore;
import io.micronaut.context.annotation.Requires;
import io.micronaut.core.annotation.Internal;
import io.micronaut.scheduling.annotation.Scheduled;
import jakarta.inject.Singleton;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Removes expired records from the in-memory store on a schedule (CONTRACT S16), so memory is
 * given back without waiting for the store to fill up; does nothing when another store replaced
 * the in-memory one. Interval: {@code idempotency.store.memory.purge-interval}
 * ({@link InMemoryStoreConfigurationProperties}), default one minute.
 */
@Internal
@Singleton
@Requires(property = IdempotencyConfigurationProperties.PREFIX + ".enabled", notEquals = "false")
public final class InMemoryStorePurger {

    private static final Logger LOG = LoggerFactory.getLogger(InMemoryStorePurger.class);
    private static final String INTERVAL = "${" + InMemoryStoreConfigurationProperties.PREFIX + ".purge-interval:"
        + InMemoryStoreConfigurationProperties.DEFAULT_PURGE_INTERVAL + "}";

    private final IdempotencyStore store;

    /**
     * Takes the active store, not the in-memory one by type: asking for
     * {@link InMemoryIdempotencyStore} would create it even where another store replaced it.
     */
    public InMemoryStorePurger(IdempotencyStore store) {
        this.store = store;
    }

    @Scheduled(fixedDelay = INTERVAL, initialDelay = INTERVAL)
    public void purge() {
        if (!(store instanceof InMemoryIdempotencyStore memory)) {
            return;
        }
        int removed = memory.purgeExpired();
        if (removed > 0 && LOG.isDebugEnabled()) {
            LOG.debug("idempotency purged {} expired in-memory records", removed);
        }
    }
}
