package dev.idempotency.messaging.internal;

import io.micronaut.core.annotation.Internal;
import io.micronaut.http.HttpRequest;
import io.micronaut.http.context.ServerRequestContext;

import java.util.Map;
import java.util.Optional;
import java.util.regex.Pattern;

/**
 * The W3C trace context (CONTRACT M11) that travels from the publishing request through the
 * outbox to the consumer: {@value #TRACEPARENT} and, with it, {@value #TRACESTATE}. Taken from the
 * request the message is published in (the headers an OpenTelemetry-instrumented caller or proxy
 * sent); a malformed {@code traceparent} is not carried.
 */
@Internal
public final class TraceContext {

    public static final String TRACEPARENT = "traceparent";
    public static final String TRACESTATE = "tracestate";
    /** version 00-fe, 32 hex trace id, 16 hex parent id, 2 hex flags (W3C Trace Context, level 1). */
    private static final Pattern FORMAT = Pattern.compile("(?!ff)[0-9a-f]{2}-(?!0{32})[0-9a-f]{32}-(?!0{16})[0-9a-f]{16}-[0-9a-f]{2}");

    private TraceContext() {
    }

    /** Adds the current request's trace context to {@code headers}, unless the application put its own there. */
    public static void addTo(Map<String, String> headers) {
        if (headers.containsKey(TRACEPARENT)) {
            return;
        }
        Optional<HttpRequest<Object>> request = ServerRequestContext.currentRequest();
        if (request.isEmpty()) {
            return;
        }
        String parent = request.get().getHeaders().get(TRACEPARENT);
        if (!valid(parent)) {
            return;
        }
        headers.put(TRACEPARENT, parent.trim());
        String state = request.get().getHeaders().get(TRACESTATE);
        if (state != null && !state.isBlank() && state.length() <= 512) {
            headers.put(TRACESTATE, state.trim());
        }
    }

    public static boolean valid(String traceparent) {
        return traceparent != null && FORMAT.matcher(traceparent.trim()).matches();
    }
}
