package dev.idempotency.client.internal;

import dev.idempotency.client.IdempotencyKey;
import dev.idempotency.client.IdempotentCall;
import io.micronaut.context.BeanContext;
import io.micronaut.context.event.StartupEvent;
import io.micronaut.context.exceptions.ConfigurationException;
import io.micronaut.core.annotation.Internal;
import io.micronaut.core.type.Argument;
import io.micronaut.http.client.annotation.Client;
import io.micronaut.inject.BeanDefinition;
import io.micronaut.inject.ExecutableMethod;
import io.micronaut.inject.qualifiers.Qualifiers;
import io.micronaut.runtime.event.annotation.EventListener;
import jakarta.inject.Singleton;

/**
 * Checks every {@link IdempotentCall} method of the application's declarative {@code @Client}
 * interfaces when the application starts, so a mistake stops the start with a message instead of
 * failing the first call: at most one parameter is the {@link IdempotencyKey}, and it is a
 * {@code String}. The settings a call names are looked up at its first call, not here: an
 * application may register them after the start, and a
 * context that merely has the client on its classpath (a service with its client's jar) never
 * calls it. (An {@link IdempotentCall} outside a {@code @Client} fails at its first call.)
 */
@Internal
@Singleton
final class IdempotentCallValidator {

    private final BeanContext beans;

    IdempotentCallValidator(BeanContext beans) {
        this.beans = beans;
    }

    @EventListener
    void validate(StartupEvent event) {
        for (BeanDefinition<?> definition : beans.getBeanDefinitions(Qualifiers.byStereotype(Client.class))) {
            for (ExecutableMethod<?, ?> method : definition.getExecutableMethods()) {
                if (method.hasAnnotation(IdempotentCall.class) || definition.hasAnnotation(IdempotentCall.class)) {
                    validate(definition, method);
                }
            }
        }
    }

    private void validate(BeanDefinition<?> definition, ExecutableMethod<?, ?> method) {
        String where = "@IdempotentCall on " + definition.getBeanType().getName() + "." + method.getMethodName();
        int keys = 0;
        for (Argument<?> argument : method.getArguments()) {
            if (!argument.getAnnotationMetadata().hasAnnotation(IdempotencyKey.class)) {
                continue;
            }
            keys++;
            if (!CharSequence.class.isAssignableFrom(argument.getType())) {
                throw new ConfigurationException(where + ": the @IdempotencyKey parameter '" + argument.getName()
                    + "' must be a String, not " + argument.getType().getName());
            }
        }
        if (keys > 1) {
            throw new ConfigurationException(where + ": more than one @IdempotencyKey parameter; a call has one key");
        }
    }
}
