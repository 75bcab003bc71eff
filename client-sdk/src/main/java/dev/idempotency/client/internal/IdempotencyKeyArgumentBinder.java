package dev.idempotency.client.internal;

import dev.idempotency.client.IdempotencyKey;
import io.micronaut.core.annotation.Internal;
import io.micronaut.core.convert.ArgumentConversionContext;
import io.micronaut.http.MutableHttpRequest;
import io.micronaut.http.client.bind.AnnotatedClientArgumentRequestBinder;
import io.micronaut.http.client.bind.ClientRequestUriContext;
import jakarta.inject.Singleton;

/**
 * Keeps an {@link IdempotencyKey} parameter out of the request the HTTP client advice binds
 * (without it the value would become part of the body): the key reaches the server only as the
 * header {@link IdempotencyKeyClientFilter} writes, in the configured format.
 */
@Internal
@Singleton
final class IdempotencyKeyArgumentBinder implements AnnotatedClientArgumentRequestBinder<IdempotencyKey> {

    @Override
    public Class<IdempotencyKey> getAnnotationType() {
        return IdempotencyKey.class;
    }

    @Override
    public void bind(ArgumentConversionContext<Object> context, ClientRequestUriContext uriContext, Object value,
                     MutableHttpRequest<?> request) {
        // nothing: the interceptor read the value, the filter writes the header
    }
}
