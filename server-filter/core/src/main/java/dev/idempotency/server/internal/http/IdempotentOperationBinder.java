package dev.idempotency.server.internal.http;

import dev.idempotency.server.IdempotencyConfigurationProperties;
import dev.idempotency.server.Idempotent;
import dev.idempotency.server.IdempotentOperation;
import io.micronaut.context.annotation.Requires;
import io.micronaut.core.annotation.Internal;
import io.micronaut.core.convert.ArgumentConversionContext;
import io.micronaut.core.type.Argument;
import io.micronaut.http.HttpRequest;
import io.micronaut.http.bind.binders.TypedRequestArgumentBinder;
import jakarta.inject.Singleton;

import java.util.Optional;

/**
 * Binds a route argument of type {@link IdempotentOperation} (CONTRACT M1): the operation the
 * request performs under the filter. Where there is none (the route is not {@link Idempotent},
 * or the key was optional and absent), a plain argument is unsatisfied and the request fails as
 * for any required argument; declare it {@code @Nullable} or {@code Optional} on such routes.
 */
@Internal
@Singleton
@Requires(property = IdempotencyConfigurationProperties.PREFIX + ".enabled", notEquals = "false")
public final class IdempotentOperationBinder implements TypedRequestArgumentBinder<IdempotentOperation> {

    private static final Argument<IdempotentOperation> TYPE = Argument.of(IdempotentOperation.class);

    @Override
    public Argument<IdempotentOperation> argumentType() {
        return TYPE;
    }

    @Override
    public BindingResult<IdempotentOperation> bind(ArgumentConversionContext<IdempotentOperation> context,
                                                   HttpRequest<?> source) {
        Optional<IdempotentOperation> operation = IdempotentOperation.of(source);
        return operation.isPresent() ? () -> operation : BindingResult.unsatisfied();
    }
}
