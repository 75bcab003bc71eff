package dev.idempotency.store.postgres;

import dev.idempotency.server.store.StoreType;
import io.micronaut.context.condition.Condition;
import io.micronaut.context.condition.ConditionContext;
import io.micronaut.core.value.PropertyResolver;

/**
 * Whether the PostgreSQL store is the one to use ({@link StoreType}):
 * {@code idempotency.store.type=postgres}, or, with no type set,
 * {@code idempotency.store.postgres.enabled=true}. Public only because Micronaut instantiates
 * conditions; not an API.
 */
public final class PostgresStoreSelected implements Condition {

    @Override
    public boolean matches(ConditionContext context) {
        PropertyResolver properties = context; // the raw ConditionContext erases get()'s type
        boolean enabled = properties.get(PostgresStoreConfigurationProperties.PREFIX + ".enabled", Boolean.class)
            .orElse(false);
        if (StoreType.selects(properties, StoreType.POSTGRES, enabled)) {
            return true;
        }
        context.fail("the PostgreSQL idempotency store is not selected (" + StoreType.PROPERTY + "=postgres, or "
            + PostgresStoreConfigurationProperties.PREFIX + ".enabled=true)");
        return false;
    }
}
