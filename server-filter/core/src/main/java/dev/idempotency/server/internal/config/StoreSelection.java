package dev.idempotency.server.internal.config;

import dev.idempotency.server.internal.telemetry.FilterLog;
import dev.idempotency.server.IdempotencyConfiguration;
import dev.idempotency.server.IdempotencyConfigurationProperties;
import dev.idempotency.server.store.IdempotencyStore;
import dev.idempotency.server.store.StoreType;
import io.micronaut.context.BeanContext;
import io.micronaut.context.annotation.Context;
import io.micronaut.context.annotation.Requires;
import io.micronaut.context.event.StartupEvent;
import io.micronaut.context.exceptions.ConfigurationException;
import io.micronaut.inject.BeanDefinition;
import io.micronaut.runtime.event.annotation.EventListener;
import io.micronaut.runtime.graceful.GracefulShutdownConfiguration;
import org.slf4j.Logger;

import java.util.Collection;
import java.util.List;
import java.util.Map;
import java.util.Optional;

/**
 * Makes the store selection ({@link StoreType}) impossible to get wrong quietly: when the
 * context starts, before anything asks for the store, it stops the application with a message
 * in the library's words when more than one store is active, or when {@code idempotency.store.type}
 * names a store whose module is missing; once started, it logs one INFO line naming the store
 * in use, the filter's main settings and whether the instance shuts down gracefully. Reads only
 * bean definitions, settings and configuration beans: no I/O.
 */
@Context
@Requires(property = IdempotencyConfigurationProperties.PREFIX + ".enabled", notEquals = "false")
final class StoreSelection {

    private static final Logger LOG = FilterLog.LOG;

    /** The stores this project ships: type name, bean class, the module that brings it. */
    private static final Map<String, List<String>> KNOWN = Map.of(
        StoreType.MEMORY, List.of("dev.idempotency.server.store.memory.InMemoryIdempotencyStore", "idempotency-server-filter"),
        StoreType.REDIS, List.of("dev.idempotency.store.redis.RedisIdempotencyStore", "idempotency-store-redis"),
        StoreType.POSTGRES, List.of("dev.idempotency.store.postgres.PostgresIdempotencyStore", "idempotency-store-postgres"));

    private final BeanContext beans;
    private final IdempotencyConfiguration config;

    StoreSelection(BeanContext beans, StoreSelectionProperties selection, IdempotencyConfiguration config) {
        this.beans = beans;
        this.config = config;
        Collection<BeanDefinition<IdempotencyStore>> active = beans.getBeanDefinitions(IdempotencyStore.class);
        Optional<String> type = selection.getType();
        if (active.size() > 1) {
            throw new ConfigurationException("idempotency: " + active.size() + " idempotency stores are active ("
                + String.join(", ", active.stream().map(d -> d.getBeanType().getName()).toList()) + "), one is needed."
                + " Choose one with " + StoreType.PROPERTY + " (" + StoreType.MEMORY + ", " + StoreType.REDIS + " or "
                + StoreType.POSTGRES + "), or remove the other store modules from the classpath.");
        }
        if (type.isPresent()) {
            String wanted = type.get();
            List<String> known = KNOWN.get(wanted);
            String activeType = active.isEmpty() ? null : active.iterator().next().getBeanType().getName();
            if (known != null && !known.get(0).equals(activeType) && StoreType.MEMORY.equals(wanted)) {
                throw new ConfigurationException("idempotency: " + StoreType.PROPERTY + "=" + type.get()
                    + ", but the bean " + activeType + " replaces the in-memory store");
            }
            if (known != null && !known.get(0).equals(activeType)) {
                throw new ConfigurationException("idempotency: " + StoreType.PROPERTY + "=" + type.get()
                    + ", but that store is not on the classpath: add the dependency dev.idempotency:" + known.get(1)
                    + (activeType == null ? "" : " (the active store is " + activeType + ")"));
            }
            if (known == null && (activeType == null || KNOWN.values().stream().anyMatch(k -> k.get(0).equals(activeType)))) {
                throw new ConfigurationException("idempotency: " + StoreType.PROPERTY + "=" + type.get()
                    + " names no store: use " + StoreType.MEMORY + ", " + StoreType.REDIS + " or " + StoreType.POSTGRES
                    + ", or the type a third-party store's module documents");
            }
        }
    }

    @EventListener
    void started(StartupEvent event) {
        IdempotencyStore store = beans.getBean(IdempotencyStore.class);
        LOG.info("idempotency store: {}; lease {}, retention {}{}; {}", store.describe(), compact(config.getLease()),
            compact(config.getRetention()), config.isTransactional() ? ", transactional mode" : "", shutdown());
    }

    /**
     * @return how this instance stops, which decides whether the requests it runs then are
     *     finished and stored or cut off and possibly run again (the operations guide, "Deploys
     *     and restarts"); Micronaut's configuration bean exists only when graceful shutdown is on
     */
    private String shutdown() {
        return beans.findBean(GracefulShutdownConfiguration.class)
            .map(g -> "graceful shutdown, grace period " + compact(g.getGracePeriod()))
            .orElse("graceful shutdown off (set micronaut.lifecycle.graceful-shutdown.enabled=true, or requests"
                + " running when this instance stops are cut off and a retry may run them again)");
    }

    /** @return e.g. {@code 30s}, {@code 24h}, {@code 1500ms}: how the settings are written */
    static String compact(java.time.Duration d) {
        long ms = d.toMillis();
        if (ms % 3_600_000 == 0 && ms > 0) {
            return ms / 3_600_000 + "h";
        }
        if (ms % 60_000 == 0 && ms > 0) {
            return ms / 60_000 + "m";
        }
        return ms % 1000 == 0 ? ms / 1000 + "s" : ms + "ms";
    }
}
