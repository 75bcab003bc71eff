package dev.idempotency.server.internal.response;

import io.micronaut.core.annotation.Internal;
import io.micronaut.core.annotation.Nullable;
import io.micronaut.http.HttpAttributes;
import io.micronaut.http.HttpRequest;
import io.micronaut.http.HttpResponse;
import io.micronaut.web.router.RouteInfo;

import java.security.Principal;

/**
 * The request and response attributes the filter reads on every covered request, read as the
 * objects they are. Micronaut's typed lookups ({@code getAttribute(name, type)}, which
 * {@code HttpRequest.getUserPrincipal()}, {@code RouteAttributes} and a response's one-argument
 * {@code getAttribute} all go through) build an {@code Argument} and a conversion context on every
 * call; the attributes read here are set as objects of the type wanted, so nothing needs converting.
 */
@Internal
public final class Attributes {

    /** The name the exception a response was made from is kept under, as attribute maps hold it. */
    private static final String EXCEPTION = HttpAttributes.EXCEPTION.toString();

    /** Whether a request class keeps {@link HttpRequest#getUserPrincipal()} as it is: a lookup of an attribute. */
    private static final ClassValue<Boolean> DEFAULT_PRINCIPAL_LOOKUP = new ClassValue<>() {
        @Override
        protected Boolean computeValue(Class<?> type) {
            try {
                return type.getMethod("getUserPrincipal").getDeclaringClass() == HttpRequest.class;
            } catch (NoSuchMethodException e) {
                return false;
            }
        }
    };

    private Attributes() {
    }

    /** @return the route the request matched, or {@code null} when none did */
    @Nullable
    public static RouteInfo<?> route(HttpRequest<?> request) {
        return request.getAttribute(HttpAttributes.ROUTE_INFO).orElse(null) instanceof RouteInfo<?> r ? r : null;
    }

    /**
     * @return the request's principal, as {@link HttpRequest#getUserPrincipal()} gives it: read as
     *     the attribute it is for a request class that keeps that default (Micronaut's own, which
     *     Micronaut Security fills), asked for otherwise (a wrapper, a server that knows it itself)
     */
    @Nullable
    public static Principal principal(HttpRequest<?> request) {
        if (DEFAULT_PRINCIPAL_LOOKUP.get(request.getClass())) {
            return request.getAttribute(HttpAttributes.PRINCIPAL).orElse(null) instanceof Principal p ? p : null;
        }
        return request.getUserPrincipal().orElse(null);
    }

    /**
     * @return whether the response was made from an exception (by an exception handler or the
     *     server's error handling): the exception is kept on the response (as
     *     {@code RouteAttributes.setException} puts it) or on the request
     */
    public static boolean madeFromException(HttpRequest<?> request, HttpResponse<?> response) {
        return response.getAttributes().getValue(EXCEPTION) instanceof Throwable
            || request.getAttribute(HttpAttributes.EXCEPTION).isPresent();
    }
}
