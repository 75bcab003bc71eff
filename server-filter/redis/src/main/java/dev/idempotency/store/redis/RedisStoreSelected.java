package dev.idempotency.store.redis;

import dev.idempotency.server.store.StoreType;
import io.micronaut.context.condition.Condition;
import io.micronaut.context.condition.ConditionContext;

/**
 * Whether the Redis store is the one to use ({@link StoreType}): {@code idempotency.store.type=redis},
 * or, with no type set, unless {@code idempotency.store.redis.enabled=false}. Public only because
 * Micronaut instantiates conditions; not an API.
 */
public final class RedisStoreSelected implements Condition {

    @Override
    public boolean matches(ConditionContext context) {
        return StoreType.matches(context, StoreType.REDIS,
            RedisIdempotencyStoreConfigurationProperties.PREFIX + ".enabled", true);
    }
}
