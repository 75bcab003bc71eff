package dev.idempotency.store.postgres;

import dev.idempotency.server.store.StoreType;
import io.micronaut.context.condition.Condition;
import io.micronaut.context.condition.ConditionContext;

/**
 * Whether the PostgreSQL store is the one to use ({@link StoreType}):
 * {@code idempotency.store.type=postgres}, or, with no type set,
 * {@code idempotency.store.postgres.enabled=true}. Public only because Micronaut instantiates
 * conditions; not an API.
 */
public final class PostgresStoreSelected implements Condition {

    @Override
    public boolean matches(ConditionContext context) {
        return StoreType.matches(context, StoreType.POSTGRES,
            PostgresStoreConfigurationProperties.PREFIX + ".enabled", false);
    }
}
