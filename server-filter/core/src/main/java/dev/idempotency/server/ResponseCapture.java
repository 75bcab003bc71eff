package dev.idempotency.server;

import dev.idempotency.server.store.StoredResponse;
import io.micronaut.core.io.Writable;
import io.micronaut.core.type.Argument;
import io.micronaut.http.HttpRequest;
import io.micronaut.http.MediaType;
import io.micronaut.http.MutableHttpResponse;
import io.micronaut.http.body.ByteBody;
import io.micronaut.http.body.MessageBodyHandlerRegistry;
import io.micronaut.http.body.MessageBodyWriter;
import io.micronaut.http.server.types.CustomizableResponseType;
import io.micronaut.web.router.RouteAttributes;
import io.micronaut.web.router.RouteInfo;
import io.micronaut.context.annotation.Requires;
import jakarta.inject.Singleton;
import org.reactivestreams.Publisher;

import java.io.ByteArrayOutputStream;
import java.io.File;
import java.io.InputStream;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Optional;

/**
 * Turns a handler's response into the bytes that go on the wire, once, so the stored copy and
 * the bytes the client receives are the same (CONTRACT S13): the body object is encoded with
 * the application's own {@link MessageBodyWriter} for the response's media type, and the
 * response is given those bytes to send. Streamed bodies (publishers, files, input streams)
 * are left untouched and stored as omitted (S15).
 */
@Singleton
@Requires(property = IdempotencyConfigurationProperties.PREFIX + ".enabled", notEquals = "false")
final class ResponseCapture {

    private static final byte[] EMPTY = new byte[0];

    private final MessageBodyHandlerRegistry registry;
    private final IdempotencyConfiguration config;

    ResponseCapture(MessageBodyHandlerRegistry registry, IdempotencyConfiguration config) {
        this.registry = registry;
        this.config = config;
    }

    /**
     * Encodes the body (replacing it with its bytes) and returns what to store.
     */
    StoredResponse capture(HttpRequest<?> request, MutableHttpResponse<?> response) {
        Object body = response.getBody().orElse(null);
        byte[] bytes = EMPTY;
        boolean omitted = false;
        if (body != null) {
            if (isStreamed(body)) {
                omitted = true;
            } else {
                Optional<byte[]> encoded = encode(request, response, body);
                if (encoded.isPresent()) {
                    bytes = encoded.get();
                    omitted = bytes.length > config.getMaxStoredBodySize();
                } else {
                    omitted = true;
                }
            }
        }
        return new StoredResponse(response.code(), storedHeaders(response), omitted ? EMPTY : bytes, omitted);
    }

    private Map<String, List<String>> storedHeaders(MutableHttpResponse<?> response) {
        Map<String, List<String>> headers = new LinkedHashMap<>();
        for (String name : response.getHeaders().names()) {
            if (config.getStoredHeaders().contains(name.toLowerCase(Locale.ROOT))) {
                headers.put(name, new ArrayList<>(response.getHeaders().getAll(name)));
            }
        }
        return headers;
    }

    @SuppressWarnings({"unchecked", "rawtypes"})
    private Optional<byte[]> encode(HttpRequest<?> request, MutableHttpResponse<?> response, Object body) {
        Optional<RouteInfo<?>> route = RouteAttributes.getRouteInfo(request);
        MediaType mediaType = response.getContentType().orElseGet(() -> route
            .map(RouteInfo::getProduces).filter(p -> !p.isEmpty()).map(p -> p.get(0))
            .orElse(MediaType.APPLICATION_JSON_TYPE));
        if (body instanceof byte[] b) {
            if (response.getContentType().isEmpty()) {
                response.contentType(mediaType);
            }
            return Optional.of(b);
        }
        Argument argument = route.map(RouteInfo::getResponseBodyType)
            .filter(a -> a.getType() != Object.class && a.getType().isInstance(body))
            .orElseGet(() -> (Argument) Argument.of(body.getClass()));
        Optional<MessageBodyWriter<Object>> writer = registry.findWriter(argument, List.of(mediaType));
        if (writer.isEmpty()) {
            return Optional.empty();
        }
        ByteArrayOutputStream out = new ByteArrayOutputStream(256);
        writer.get().writeTo(argument, mediaType, body, response.getHeaders(), out);
        byte[] bytes = out.toByteArray();
        if (response.getContentType().isEmpty()) {
            response.contentType(mediaType);
        }
        ((MutableHttpResponse<Object>) response).body(bytes);
        return Optional.of(bytes);
    }

    private static boolean isStreamed(Object body) {
        return body instanceof Publisher<?>
            || body instanceof InputStream
            || body instanceof File
            || body instanceof ByteBody
            || body instanceof Writable
            || body instanceof CustomizableResponseType;
    }
}
