package dev.idempotency.client.internal;

import dev.idempotency.client.IdempotentClient;
import dev.idempotency.client.IdempotentClientConfig;
import dev.idempotency.client.IdempotentClientConfigurationProperties;
import dev.idempotency.client.internal.metrics.ClientTracing;
import dev.idempotency.client.internal.metrics.MetricsSupport;
import io.micronaut.context.BeanLocator;
import io.micronaut.context.annotation.EachBean;
import io.micronaut.context.annotation.Factory;
import io.micronaut.http.HttpVersion;
import io.micronaut.http.client.HttpClient;
import io.micronaut.http.client.HttpClientRegistry;
import io.micronaut.http.client.HttpVersionSelection;
import io.micronaut.http.client.ServiceHttpClientConfiguration;
import io.micronaut.inject.qualifiers.Qualifiers;
import io.micronaut.json.JsonMapper;

import java.util.Optional;

/**
 * Makes one {@link IdempotentClient} per {@code idempotency.client.<name>} entry, sending
 * through the Micronaut HTTP client its {@code client-id} names (by default the service of the
 * same name, {@code micronaut.http.services.<name>}, when one is configured, else the default
 * client), decoding with the application's {@link JsonMapper}, metering into its
 * {@code MeterRegistry} and tracing through its {@code OpenTelemetry} when there are such beans.
 */
@Factory
final class IdempotentClientFactory {

    @EachBean(IdempotentClientConfigurationProperties.class)
    IdempotentClient idempotentClient(IdempotentClientConfigurationProperties configuration,
                                      HttpClientRegistry<?> registry,
                                      JsonMapper jsonMapper,
                                      Optional<MetricsSupport> metrics,
                                      Optional<ClientTracing> tracing,
                                      BeanLocator beans) {
        IdempotentClientConfig.Builder builder = configuration.toBuilder().jsonMapper(jsonMapper);
        metrics.ifPresent(m -> m.configure(builder));
        String name = configuration.getName();
        HttpClient httpClient = configuration.getClientId()
            .or(() -> beans.findBean(ServiceHttpClientConfiguration.class, Qualifiers.byName(name)).map(service -> name))
            .<HttpClient>map(id -> registry.getClient(HttpVersionSelection.forLegacyVersion(HttpVersion.HTTP_1_1), id, null))
            .orElseGet(registry::getDefaultClient);
        return new DefaultIdempotentClient(httpClient, builder.build(), tracing.orElse(ClientTracing.NONE));
    }
}
