package dev.idempotency.client.internal;

import dev.idempotency.client.IdempotentCall;
import io.micronaut.core.annotation.Internal;
import io.micronaut.core.order.Ordered;
import io.micronaut.http.HttpRequest;
import io.micronaut.http.HttpResponse;
import io.micronaut.http.MutableHttpRequest;
import io.micronaut.http.annotation.ClientFilter;
import io.micronaut.http.annotation.RequestFilter;
import io.micronaut.http.annotation.ResponseFilter;

/**
 * Writes the Idempotency-Key of an {@link IdempotentCall} invocation on EACH attempt's request
 * (Micronaut binds a new request per attempt), and notes each attempt's response for the
 * invocation's result. It never makes a key: the key was made once per invocation by the
 * interceptor, before the first attempt. Requests that do not come from an annotated method
 * pass untouched. Public only because Micronaut invokes its filter methods.
 */
@Internal
@ClientFilter(ClientFilter.MATCH_ALL_PATTERN)
public final class IdempotencyKeyClientFilter implements Ordered {

    /** Early, so that later filters (signing, logging) see the key. */
    public static final int ORDER = Ordered.HIGHEST_PRECEDENCE + 1000;

    /**
     * @param request an attempt's request
     */
    @RequestFilter
    public void addKey(MutableHttpRequest<?> request) {
        DeclarativeCall.of(request).ifPresent(call -> call.onRequest(request));
    }

    /**
     * @param request  the attempt's request
     * @param response its response
     */
    @ResponseFilter
    public void noteResponse(HttpRequest<?> request, HttpResponse<?> response) {
        DeclarativeCall.of(request).ifPresent(call -> call.onResponse(response));
    }

    @Override
    public int getOrder() {
        return ORDER;
    }
}
