package dev.idempotency.server.store;

import io.micronaut.context.condition.ConditionContext;
import io.micronaut.core.value.PropertyResolver;

import java.util.Locale;
import java.util.Optional;

/**
 * Which idempotency store an application uses: one rule for every store (CONTRACT S17).
 *
 * <p>{@code idempotency.store.type} names it: {@value #MEMORY}, {@value #REDIS} or
 * {@value #POSTGRES} (or the name a third-party store's module documents). When it is set, that
 * store is the only one active, whatever other store modules are on the classpath, and each
 * store's {@code enabled} setting is ignored. When it is not set, a store module on the classpath
 * is active unless its {@code enabled} setting is {@code false} (the PostgreSQL store, which
 * needs a datasource, waits for {@code idempotency.store.postgres.enabled=true}), and the
 * in-memory store is used when none is. Two active stores stop the application at startup with a
 * message naming them; the store in use is logged once at INFO when the application starts.
 *
 * <p>Store modules call {@link #selects} from the condition of their store bean.
 */
public final class StoreType {

    /** The setting that names the store. */
    public static final String PROPERTY = "idempotency.store.type";
    /** The in-memory store of the filter module: one instance only. */
    public static final String MEMORY = "memory";
    /** The Redis store, {@code idempotency-store-redis}. */
    public static final String REDIS = "redis";
    /** The PostgreSQL store, {@code idempotency-store-postgres}. */
    public static final String POSTGRES = "postgres";

    private StoreType() {
    }

    /**
     * @param properties      the application's configuration
     * @param type            the store's type name, e.g. {@value #REDIS}
     * @param activeWhenUnset whether the store is active when {@value #PROPERTY} is not set (the
     *                        store's own {@code enabled} setting, with its default)
     * @return whether the store named {@code type} is the one to use
     */
    public static boolean selects(PropertyResolver properties, String type, boolean activeWhenUnset) {
        return configured(properties).map(type::equals).orElse(activeWhenUnset);
    }

    /**
     * The condition of a store module's bean: whether the store named {@code type} is the one to
     * use, given its {@code enabled} setting and that setting's default; when it is not, says why
     * in the context's failures (Micronaut's condition report).
     *
     * @param context         the condition's context
     * @param type            the store's type name, e.g. {@value #REDIS}
     * @param enabledProperty the store's own switch, e.g. {@code idempotency.store.redis.enabled}
     * @param enabledDefault  that switch's default
     * @return whether the store's bean is active
     */
    public static boolean matches(ConditionContext<?> context, String type, String enabledProperty,
                                  boolean enabledDefault) {
        PropertyResolver properties = context;
        boolean enabled = properties.get(enabledProperty, Boolean.class).orElse(enabledDefault);
        if (selects(properties, type, enabled)) {
            return true;
        }
        context.fail("the " + type + " idempotency store is not selected (" + PROPERTY + "=" + type + ", or, without it, "
            + enabledProperty + "=" + !enabledDefault + (enabledDefault ? " switches it off)" : " switches it on)"));
        return false;
    }

    /** @return the value of {@value #PROPERTY}, trimmed and in lower case, when it is set and not blank */
    static Optional<String> configured(PropertyResolver properties) {
        return properties.get(PROPERTY, String.class)
            .map(v -> v.trim().toLowerCase(Locale.ROOT))
            .filter(v -> !v.isEmpty());
    }
}
