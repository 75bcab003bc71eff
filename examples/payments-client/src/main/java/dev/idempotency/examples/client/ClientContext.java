package dev.idempotency.examples.client;

import dev.idempotency.client.IdempotentClient;
import io.micronaut.context.ApplicationContext;
import io.micronaut.inject.qualifiers.Qualifiers;

import java.util.HashMap;
import java.util.Map;

/**
 * The demo's own Micronaut context, for its declarative {@link PaymentsApi} client. The payments
 * service, which the demo can start in-process, is on the same classpath with its beans and its
 * configuration files. This context reads only the properties it is given (not
 * {@code application*.properties}, not environment variables) and switches the service side off
 * with the service's own switches: the Idempotency-Key filter, the Redis store, the outbox and the broker modules by property,
 * and the {@code postgres} environment's beans because they need a datasource this context does
 * not have (Micronaut still reads {@code MICRONAUT_ENVIRONMENTS} here).
 */
final class ClientContext {

    private ClientContext() {
    }

    /**
     * @param properties the client's configuration
     * @return the started context
     */
    static ApplicationContext start(Map<String, Object> properties) {
        return start(properties, null);
    }

    /**
     * @param properties the client's configuration
     * @param payments   the settings {@code @IdempotentCall("payments")} runs with, registered before
     *                   the context starts (where the SDK checks that they exist); {@code null} for none
     * @return the started context
     */
    static ApplicationContext start(Map<String, Object> properties, IdempotentClient payments) {
        Map<String, Object> all = new HashMap<>(properties);
        all.put("idempotency.enabled", false);
        all.put("idempotency.store.type", "memory");
        // nor the service's asynchronous half: no outbox, no broker module
        all.put("idempotency.outbox.enabled", false);
        all.put("idempotency.rabbitmq.enabled", false);
        all.put("idempotency.kafka.enabled", false);
        ApplicationContext context = ApplicationContext.builder()
            .environments("payments-client")
            .deduceEnvironment(false)
            .enableDefaultPropertySources(false)
            .environmentPropertySource(false)
            .banner(false)
            .properties(all)
            .build();
        if (payments != null) {
            context.registerSingleton(IdempotentClient.class, payments, Qualifiers.byName("payments"));
        }
        return context.start();
    }
}
