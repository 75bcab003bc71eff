package dev.idempotency.server.internal.telemetry;

import io.micronaut.core.annotation.Internal;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The filter's one log category, {@value #CATEGORY}: the outcome lines, store and lease warnings
 * and the startup line all go there, whichever package writes them, so an operator sets one
 * level and greps one name. The category kept its name when the filter's classes moved into
 * packages of their own.
 */
@Internal
public final class FilterLog {

    /** The category's name, the filter's class name before the packages split. */
    public static final String CATEGORY = "dev.idempotency.server.IdempotencyFilter";

    /** The logger of {@link #CATEGORY}. */
    public static final Logger LOG = LoggerFactory.getLogger(CATEGORY);

    private FilterLog() {
    }
}
