package dev.idempotency.store.redis;

import dev.idempotency.server.store.StoreType;
import io.micronaut.context.condition.Condition;
import io.micronaut.context.condition.ConditionContext;
import io.micronaut.core.value.PropertyResolver;

/**
 * Whether the Redis store is the one to use ({@link StoreType}): {@code idempotency.store.type=redis},
 * or, with no type set, unless {@code idempotency.store.redis.enabled=false}. Public only because
 * Micronaut instantiates conditions; not an API.
 */
public final class RedisStoreSelected implements Condition {

    @Override
    public boolean matches(ConditionContext context) {
        PropertyResolver properties = context; // the raw ConditionContext erases get()'s type
        boolean enabled = properties.get(RedisIdempotencyStoreConfigurationProperties.PREFIX + ".enabled", Boolean.class)
            .orElse(true);
        if (StoreType.selects(properties, StoreType.REDIS, enabled)) {
            return true;
        }
        context.fail("the Redis idempotency store is not selected (" + StoreType.PROPERTY + ", or "
            + RedisIdempotencyStoreConfigurationProperties.PREFIX + ".enabled=false)");
        return false;
    }
}
