package dev.idempotency.client.internal;

import dev.idempotency.client.IdempotentCall;
import dev.idempotency.client.IdempotentResult;
import dev.idempotency.client.internal.policy.Keys;
import io.micronaut.aop.InterceptedMethod;
import io.micronaut.aop.MethodInterceptor;
import io.micronaut.aop.MethodInvocationContext;
import io.micronaut.aop.kotlin.KotlinInterceptedMethod;
import io.micronaut.core.annotation.Internal;
import io.micronaut.core.annotation.Nullable;
import io.micronaut.core.async.publisher.Publishers;
import io.micronaut.core.convert.ConversionService;
import io.micronaut.http.HttpRequest;
import io.micronaut.http.HttpResponse;
import io.micronaut.http.MutableHttpRequest;
import io.micronaut.http.client.ClientAttributes;
import org.reactivestreams.Publisher;

import java.util.Optional;

/**
 * One invocation of an {@link IdempotentCall} method, shared by the interceptor that retries it
 * and the client filter that writes its key on each attempt's request. It is stored as an
 * attribute of the method's invocation context, which the HTTP client advice puts on every
 * request it binds ({@link ClientAttributes#getInvocationContext}): the key travels with THIS
 * invocation's requests only, whatever thread the filter runs on, and never leaks into other
 * HTTP calls made meanwhile.
 */
@Internal
public final class DeclarativeCall {

    public static final String ATTRIBUTE = DeclarativeCall.class.getName();
    public static final ThreadLocal<IdempotentResult<?>> LAST = new ThreadLocal<>();

    private final MethodInvocationContext<Object, Object> context;
    private final MethodInterceptor<Object, Object> interceptor;
    /** A Kotlin {@code suspend} method's interception, whose continuation each attempt swaps for its own; else null. */
    @Nullable
    private final KotlinInterceptedMethod suspended;
    private final ConversionService conversionService;
    private final Keys.Chosen key;
    private final String headerName;
    private final String budgetTarget;
    private volatile String headerValue;
    private volatile String lastRequest;
    private volatile HttpResponse<?> lastResponse;

    public DeclarativeCall(MethodInvocationContext<Object, Object> context, MethodInterceptor<Object, Object> interceptor,
                    InterceptedMethod intercepted, ConversionService conversionService, Keys.Chosen key, String headerName,
                    String budgetTarget) {
        this.context = context;
        this.interceptor = interceptor;
        this.suspended = intercepted instanceof KotlinInterceptedMethod kotlin ? kotlin : null;
        this.conversionService = conversionService;
        this.key = key;
        this.headerName = headerName;
        this.budgetTarget = budgetTarget;
    }

    /** @return the call whose request this is, if the request was bound for an {@link IdempotentCall} method */
    public static Optional<DeclarativeCall> of(HttpRequest<?> request) {
        return ClientAttributes.getInvocationContext(request)
            .flatMap(c -> c.getAttribute(ATTRIBUTE))
            .filter(DeclarativeCall.class::isInstance)
            .map(DeclarativeCall.class::cast);
    }

    public String key() {
        return key.key();
    }

    /** @return the key and, when derived, where from */
    Keys.Chosen chosenKey() {
        return key;
    }

    public String budgetTarget() {
        return budgetTarget;
    }

    /** Called by the engine before each attempt. */
    public void beginAttempt(String headerValue) {
        this.headerValue = headerValue;
        this.lastResponse = null;
    }

    /**
     * One attempt: the rest of the interceptor chain, i.e. the HTTP client advice binds and sends a
     * new request. For a Kotlin {@code suspend} method the attempt gets a continuation of its own,
     * which completes the stage returned here: with the caller's continuation, the client would
     * resume the caller with the first attempt's outcome, and no attempt after it would count.
     */
    public Object proceed() {
        return suspended != null ? suspended.interceptResultAsCompletionStage(interceptor) : context.proceed(interceptor);
    }

    /**
     * @return {@code value} as a {@link Publisher} when it is a reactive type other than one (a
     *     Kotlin {@code Flow}, say), else {@code value} itself
     */
    public Object asPublisherIfReactive(Object value) {
        if (value == null || value instanceof Publisher<?> || value instanceof java.util.concurrent.CompletionStage<?>
            || !Publishers.isConvertibleToPublisher(value)) {
            return value;
        }
        return conversionService.convert(value, Publisher.class).map(p -> (Object) p).orElse(value);
    }

    /** Called by the filter on each attempt's request: the same key every time. */
    public void onRequest(MutableHttpRequest<?> request) {
        request.getHeaders().remove(headerName);
        request.header(headerName, headerValue);
        lastRequest = request.getMethodName() + " " + request.getPath();
    }

    /** Called by the filter with each attempt's response (a 2xx/3xx one at least). */
    public void onResponse(HttpResponse<?> response) {
        lastResponse = response;
    }

    @Nullable
    public HttpResponse<?> lastResponse() {
        return lastResponse;
    }

    public String describe() {
        String method = context.getDeclaringType().getSimpleName() + "." + context.getMethodName();
        String request = lastRequest;
        return request == null ? method : request + " (" + method + ")";
    }
}
