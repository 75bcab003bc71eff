package dev.idempotency.client.internal;

import dev.idempotency.client.IdempotencyKey;
import dev.idempotency.client.IdempotentCall;
import dev.idempotency.client.IdempotentClient;
import dev.idempotency.client.IdempotentClientConfig;
import dev.idempotency.client.internal.metrics.ClientTracing;
import dev.idempotency.client.internal.metrics.MetricsSupport;
import dev.idempotency.client.internal.policy.Keys;
import dev.idempotency.client.internal.policy.RetryBudget;
import io.micronaut.aop.InterceptPhase;
import io.micronaut.aop.InterceptedMethod;
import io.micronaut.aop.InterceptorBean;
import io.micronaut.aop.MethodInterceptor;
import io.micronaut.aop.MethodInvocationContext;
import io.micronaut.context.BeanContext;
import io.micronaut.core.annotation.Internal;
import io.micronaut.core.annotation.Nullable;
import io.micronaut.core.async.publisher.Publishers;
import io.micronaut.core.convert.ConversionService;
import io.micronaut.core.type.Argument;
import io.micronaut.core.type.MutableArgumentValue;
import io.micronaut.http.annotation.HttpMethodMapping;
import io.micronaut.http.client.annotation.Client;
import io.micronaut.inject.qualifiers.Qualifiers;
import io.micronaut.json.JsonMapper;

import java.net.URI;
import java.util.Locale;
import java.util.Optional;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ConcurrentMap;

/**
 * Runs an {@link IdempotentCall} invocation: makes (or validates) its key once, then lets the
 * engine of the named settings run the whole invocation as many times as the policy allows,
 * each attempt being {@code context.proceed(this)}: the rest of the chain, the HTTP client
 * advice last, which binds and sends a fresh request that {@link IdempotencyKeyClientFilter}
 * gives this invocation's key. Ordered where Micronaut's own retry advice sits.
 */
@Internal
@InterceptorBean(IdempotentCall.class)
final class IdempotentCallInterceptor implements MethodInterceptor<Object, Object> {

    static final String DEFAULT = "default";

    private final BeanContext beanContext;
    private final ConversionService conversionService;
    private final ConcurrentMap<String, DefaultIdempotentClient> engines = new ConcurrentHashMap<>();

    IdempotentCallInterceptor(BeanContext beanContext, ConversionService conversionService) {
        this.beanContext = beanContext;
        this.conversionService = conversionService;
    }

    @Override
    public int getOrder() {
        return InterceptPhase.RETRY.getPosition();
    }

    @Override
    public Object intercept(MethodInvocationContext<Object, Object> context) {
        DeclarativeCall.LAST.remove();
        if (!context.hasStereotype(Client.class)) {
            throw new IllegalStateException("@IdempotentCall belongs on a method of a declarative @Client interface; "
                + context.getExecutableMethod() + " is not one");
        }
        InterceptedMethod intercepted = InterceptedMethod.of(context, conversionService);
        String name = context.stringValue(IdempotentCall.class).filter(n -> !n.isBlank()).orElse(DEFAULT);
        DefaultIdempotentClient engine = engine(name);
        IdempotentClientConfig config = engine.config();
        Keys.Chosen key = Keys.choose(callerKey(context).orElse(null), step(context), httpMethod(context),
            context.stringValue(HttpMethodMapping.class).orElse("/"), config);
        DeclarativeCall call = new DeclarativeCall(context, this, intercepted, conversionService, key, config.headerName(),
            budgetTarget(context, name));
        context.setAttribute(DeclarativeCall.ATTRIBUTE, call);
        if (intercepted.resultType() != InterceptedMethod.ResultType.SYNCHRONOUS) {
            // CompletableFuture/CompletionStage, or a Publisher (Mono, Flux, ...): the same policy,
            // run by callbacks; the method returns at once
            CompletableFuture<Object> promise = engine.invokeAsync(call);
            promise.whenComplete((v, e) -> context.removeAttribute(DeclarativeCall.ATTRIBUTE, DeclarativeCall.class));
            if (intercepted.resultType() != InterceptedMethod.ResultType.PUBLISHER) {
                return intercepted.handleResult(promise);
            }
            Class<?> declared = context.getReturnType().getType();
            if (ReactorResults.PRESENT && ReactorResults.handles(declared)) {
                return ReactorResults.adapt(declared, promise);
            }
            return intercepted.handleResult(Publishers.fromCompletableFuture(promise));
        }
        try {
            return engine.invoke(call);
        } finally {
            context.removeAttribute(DeclarativeCall.ATTRIBUTE, DeclarativeCall.class);
        }
    }

    /** @return the step named on the method (or its interface), or {@code null} for the default */
    @Nullable
    private static String step(MethodInvocationContext<Object, Object> context) {
        Optional<String> step = context.stringValue(IdempotentCall.class, "step").filter(s -> !s.isEmpty());
        return step.map(Keys::validateStep).orElse(null);
    }

    /** @return the HTTP method of the method's mapping, e.g. {@code POST} */
    private static String httpMethod(MethodInvocationContext<Object, Object> context) {
        return context.getAnnotationTypeByStereotype(HttpMethodMapping.class)
            .map(type -> type.getSimpleName().toUpperCase(Locale.ROOT))
            .orElse("HTTP");
    }

    /** @return the caller's key from the {@link IdempotencyKey} parameter, if it is not null */
    @SuppressWarnings("unchecked")
    private static Optional<String> callerKey(MethodInvocationContext<Object, Object> context) {
        Argument<?>[] arguments = context.getArguments();
        Object[] values = context.getParameterValues();
        String found = null;
        boolean seen = false;
        for (int i = 0; i < arguments.length; i++) {
            if (!arguments[i].getAnnotationMetadata().hasAnnotation(IdempotencyKey.class)) {
                continue;
            }
            if (seen) {
                throw new IllegalStateException("more than one @IdempotencyKey parameter on " + context.getExecutableMethod());
            }
            seen = true;
            if (!CharSequence.class.isAssignableFrom(arguments[i].getType())) {
                throw new IllegalStateException("the @IdempotencyKey parameter of " + context.getExecutableMethod()
                    + " must be a String, not " + arguments[i].getType().getName());
            }
            if (values[i] != null) {
                found = values[i].toString();
            } else {
                // keep the HTTP client advice's null check quiet; the binder ignores the value anyway
                MutableArgumentValue<Object> value = (MutableArgumentValue<Object>) context.getParameters().get(arguments[i].getName());
                if (value != null) {
                    value.setValue("");
                }
            }
        }
        return Optional.ofNullable(found);
    }

    /** @return the retry budget's target: the client's URL host, or its service id */
    private static String budgetTarget(MethodInvocationContext<Object, Object> context, String name) {
        String id = context.stringValue(Client.class, "id").filter(s -> !s.isBlank())
            .or(() -> context.stringValue(Client.class).filter(s -> !s.isBlank()))
            .orElse(context.getDeclaringType().getName());
        try {
            URI uri = URI.create(id);
            if (uri.isAbsolute() && uri.getHost() != null) {
                return RetryBudget.target(uri, name);
            }
        } catch (IllegalArgumentException notAUri) {
            // a service id
        }
        return "service:" + id;
    }

    private DefaultIdempotentClient engine(String name) {
        DefaultIdempotentClient engine = engines.get(name);
        if (engine != null) {
            return engine;
        }
        return engines.computeIfAbsent(name, this::createEngine);
    }

    private DefaultIdempotentClient createEngine(String name) {
        Optional<IdempotentClient> bean = beanContext.findBean(IdempotentClient.class, Qualifiers.byName(name));
        if (bean.isPresent()) {
            if (bean.get() instanceof DefaultIdempotentClient engine) {
                return engine;
            }
            throw new IllegalStateException("the IdempotentClient bean named '" + name
                + "' is not the SDK's own; make it with IdempotentClient.create(...)");
        }
        if (!DEFAULT.equals(name)) {
            throw new IllegalStateException("@IdempotentCall(\"" + name + "\"): there are no idempotent client settings named '"
                + name + "'; configure idempotency.client." + name + ".* or define an IdempotentClient bean @Named(\"" + name + "\")");
        }
        IdempotentClientConfig.Builder builder = IdempotentClientConfig.custom().name(DEFAULT);
        beanContext.findBean(JsonMapper.class).ifPresent(builder::jsonMapper);
        beanContext.findBean(MetricsSupport.class).ifPresent(m -> m.configure(builder));
        return new DefaultIdempotentClient(null, builder.build(),
            beanContext.findBean(ClientTracing.class).orElse(ClientTracing.NONE));
    }
}
