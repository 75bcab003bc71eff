package dev.idempotency.rabbitmq;

import io.micronaut.context.annotation.EachProperty;
import io.micronaut.context.annotation.Parameter;

import java.util.Locale;
import java.util.Set;

/**
 * {@code idempotency.rabbitmq.exchanges.<name>.*}: an exchange the module declares at startup
 * (durable), so the outbox's messages and the consumers' bindings never depend on one being
 * there already.
 */
@EachProperty(RabbitConfigurationProperties.PREFIX + ".exchanges")
public class RabbitExchangeConfiguration {

    private static final Set<String> TYPES = Set.of("direct", "topic", "fanout", "headers");

    private final String name;
    private String type = "topic";

    public RabbitExchangeConfiguration(@Parameter String name) {
        this.name = name;
    }

    /** @return the exchange's name */
    public String getName() {
        return name;
    }

    public String getType() {
        return type;
    }

    /**
     * The exchange type: {@code direct}, {@code topic}, {@code fanout} or {@code headers}.
     * Default {@code topic}.
     *
     * @param type one of the four
     */
    public void setType(String type) {
        String t = type == null ? null : type.toLowerCase(Locale.ROOT);
        if (!TYPES.contains(t)) {
            throw new IllegalArgumentException(RabbitConfigurationProperties.PREFIX + ".exchanges." + name
                + ".type must be one of " + TYPES + ", was " + type);
        }
        this.type = t;
    }
}
