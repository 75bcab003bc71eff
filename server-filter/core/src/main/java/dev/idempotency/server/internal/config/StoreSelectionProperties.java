package dev.idempotency.server.internal.config;

import dev.idempotency.server.IdempotencyConfigurationProperties;
import io.micronaut.context.annotation.ConfigurationProperties;
import io.micronaut.core.annotation.Nullable;

import java.util.Locale;
import java.util.Optional;

/** {@code idempotency.store.*}: which store the filter uses ({@link dev.idempotency.server.store.StoreType}). */
@ConfigurationProperties(StoreSelectionProperties.PREFIX)
final class StoreSelectionProperties {

    static final String PREFIX = IdempotencyConfigurationProperties.PREFIX + ".store";

    private String type;

    /** @return the configured type, trimmed and in lower case; empty when not set */
    Optional<String> getType() {
        return Optional.ofNullable(type);
    }

    /**
     * The store to use: {@code memory}, {@code redis} or {@code postgres} (or a type a
     * third-party store's module documents). When set, it decides alone, whatever other store
     * modules are on the classpath, and the stores' {@code enabled} settings are ignored. Without
     * it the Redis module is used when present (unless
     * {@code idempotency.store.redis.enabled=false}), the PostgreSQL module when
     * {@code idempotency.store.postgres.enabled=true}, and memory otherwise. A type whose module
     * is missing, or two active stores, stop the application at startup. Default: none.
     *
     * @param type the store's type name
     */
    public void setType(@Nullable String type) {
        String t = type == null ? null : type.trim().toLowerCase(Locale.ROOT);
        this.type = t == null || t.isEmpty() ? null : t;
    }
}
