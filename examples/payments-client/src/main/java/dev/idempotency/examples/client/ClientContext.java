package dev.idempotency.examples.client;

import io.micronaut.context.ApplicationContext;
import io.micronaut.context.ApplicationContextConfiguration;
import io.micronaut.context.DefaultApplicationContext;
import io.micronaut.context.env.PropertySource;
import io.micronaut.inject.BeanDefinitionReference;

import java.util.List;
import java.util.Map;
import java.util.Optional;

/**
 * The demo's own Micronaut context, for its declarative {@link PaymentsApi} client. The payments
 * service, which the demo can start in-process, is on the same classpath with its beans (the
 * Idempotency-Key server filter, its stores, the controllers, the PostgreSQL schema migration of
 * the {@code postgres} environment) and its configuration files; a plain context would load them
 * all. This one loads neither: only the client's beans (the SDK, Micronaut's HTTP client, serde)
 * and only the properties it is given, not {@code application*.properties} nor environment
 * variables.
 *
 * <p>The builder's options cover the configuration, not the beans: Micronaut reads
 * {@code MICRONAUT_ENVIRONMENTS} whatever the builder says, so with {@code postgres} exported in
 * the shell (to run the service) a plain client context would also run the service's schema
 * migration at startup, and fail for want of a datasource. Hence the filter on the bean
 * definitions, through the protected extension point micronaut-serde's own mapper context uses.
 */
final class ClientContext extends DefaultApplicationContext {

    /** The packages of the service's beans and of the server filter and its stores. */
    private static final List<String> SERVER_PACKAGES = List.of(
        "dev.idempotency.examples.payments.", "dev.idempotency.server.", "dev.idempotency.store.");

    private ClientContext() {
        super(new ApplicationContextConfiguration() {
            @Override
            public List<String> getEnvironments() {
                return List.of("payments-client");
            }

            @Override
            public Optional<Boolean> getDeduceEnvironments() {
                return Optional.of(false);
            }

            @Override
            public boolean isEnableDefaultPropertySources() {
                return false; // application*.properties: the service's
            }

            @Override
            public boolean isEnvironmentPropertySource() {
                return false; // e.g. MICRONAUT_SERVER_PORT, REDIS_URI: the service's
            }

            @Override
            public boolean isBannerEnabled() {
                return false;
            }
        });
    }

    /**
     * @param properties the context's only configuration
     * @return the started context
     */
    static ApplicationContext start(Map<String, Object> properties) {
        ClientContext context = new ClientContext();
        context.getEnvironment().addPropertySource(PropertySource.of("payments-client", properties));
        return context.start();
    }

    @Override
    protected List<BeanDefinitionReference> resolveBeanDefinitionReferences() {
        return super.resolveBeanDefinitionReferences().stream()
            .filter(r -> SERVER_PACKAGES.stream().noneMatch(r.getBeanDefinitionName()::startsWith))
            .toList();
    }
}
