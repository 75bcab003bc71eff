package dev.idempotency.server.internal.config;

import io.micronaut.context.annotation.Requires;
import io.micronaut.core.annotation.Internal;
import io.micronaut.core.async.propagation.KotlinCoroutinePropagation;
import io.micronaut.core.convert.MutableConversionService;
import io.micronaut.core.convert.TypeConverterRegistrar;
import io.micronaut.core.order.Ordered;
import io.micronaut.core.propagation.PropagatedContext;
import jakarta.inject.Singleton;
import kotlin.coroutines.CoroutineContext;
import kotlin.coroutines.EmptyCoroutineContext;
import kotlinx.coroutines.flow.Flow;
import kotlinx.coroutines.reactive.ReactiveFlowKt;
import org.reactivestreams.Publisher;

/**
 * A route that returns a Kotlin {@code Flow} keeps the operation in scope (CONTRACT S23, C11):
 * Micronaut turns the flow into a {@link Publisher} when the route returns it, with no coroutine
 * context, so after the flow's first suspension {@code IdempotentOperation.current()} was empty, a
 * client call sent a random key instead of a derived one, and a step found no operation. This
 * converter, registered after Micronaut's own, turns it into one whose coroutine context carries
 * the propagated context of the request (the operation among it), as a suspend route's has.
 * Present only when kotlinx-coroutines-reactive is.
 */
@Internal
@Singleton
@Requires(classes = {Flow.class, ReactiveFlowKt.class, KotlinCoroutinePropagation.class})
final class FlowPropagation implements TypeConverterRegistrar, Ordered {

    @Override
    public int getOrder() {
        return Ordered.LOWEST_PRECEDENCE; // after micronaut-kotlin-runtime's Flow converter, so this one stands
    }

    @Override
    public void register(MutableConversionService conversionService) {
        conversionService.addConverter(Flow.class, Publisher.class, FlowPropagation::asPublisher);
    }

    private static Publisher<?> asPublisher(Flow<?> flow) {
        CoroutineContext context = PropagatedContext.find()
            .map(p -> KotlinCoroutinePropagation.Companion.addPropagatedContext(EmptyCoroutineContext.INSTANCE, p))
            .orElse(EmptyCoroutineContext.INSTANCE);
        return ReactiveFlowKt.asPublisher(flow, context);
    }
}
