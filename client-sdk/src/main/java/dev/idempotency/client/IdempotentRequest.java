package dev.idempotency.client;

import dev.idempotency.client.internal.policy.Keys;
import io.micronaut.core.annotation.Nullable;
import io.micronaut.http.HttpMethod;
import io.micronaut.http.MediaType;
import org.reactivestreams.Publisher;

import java.io.InputStream;
import java.net.URI;
import java.nio.channels.ReadableByteChannel;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Optional;

/**
 * One logical operation: the request that every attempt sends, unchanged, with the same
 * Idempotency-Key. Immutable; each {@code with}-style method returns a new request.
 *
 * <pre>{@code
 * IdempotentRequest op = IdempotentRequest.post("/payments", new NewPayment(1000, "EUR"))
 *     .key(order.paymentKey())          // optional: otherwise a UUID is made per execution
 *     .step("create-payment")           // optional: names the call inside an operation (C11)
 *     .header("X-Tenant", "acme");
 * }</pre>
 *
 * <p>The body is encoded by the HTTP client's codecs on each attempt, so it must not change
 * while the operation runs. A body that can be read only once (an {@link InputStream}, a
 * {@link ReadableByteChannel} or a {@link Publisher}) is sent once and never retried (C8).
 */
public final class IdempotentRequest {

    private final HttpMethod method;
    private final URI uri;
    private final Object body;
    private final MediaType contentType;
    private final String key;
    private final String step;
    private final Map<String, List<String>> headers;

    private IdempotentRequest(HttpMethod method, URI uri, @Nullable Object body, @Nullable MediaType contentType,
                                @Nullable String key, @Nullable String step, Map<String, List<String>> headers) {
        this.method = Objects.requireNonNull(method, "method");
        this.uri = Objects.requireNonNull(uri, "uri");
        this.body = body;
        this.contentType = contentType;
        this.key = key;
        this.step = step;
        this.headers = headers;
    }

    /**
     * @param method the HTTP method (the server covers POST and PATCH by default)
     * @param uri    absolute, or relative to the HTTP client's base URL
     * @param body   the request body, or {@code null}
     * @return the request
     */
    public static IdempotentRequest of(HttpMethod method, String uri, @Nullable Object body) {
        return new IdempotentRequest(method, URI.create(Objects.requireNonNull(uri, "uri")), body, null, null, null, Map.of());
    }

    /**
     * @param uri  absolute, or relative to the HTTP client's base URL
     * @param body the request body, or {@code null}
     * @return a POST request
     */
    public static IdempotentRequest post(String uri, @Nullable Object body) {
        return of(HttpMethod.POST, uri, body);
    }

    /**
     * @param uri  absolute, or relative to the HTTP client's base URL
     * @param body the request body, or {@code null}
     * @return a PATCH request
     */
    public static IdempotentRequest patch(String uri, @Nullable Object body) {
        return of(HttpMethod.PATCH, uri, body);
    }

    /**
     * Uses the caller's own key instead of a generated one (C1), e.g. a key stored with the order
     * before the call so that a restarted process retries with the same key. It is validated
     * like the server does (1 to 255 printable ASCII characters) when the operation executes.
     *
     * @param key the key, unescaped
     * @return a copy with the key
     */
    public IdempotentRequest key(String key) {
        return new IdempotentRequest(method, uri, body, contentType, Objects.requireNonNull(key, "key"), step, headers);
    }

    /**
     * Names this call's step within the operation it is made in (CONTRACT C11). Inside an
     * operation under the server filter, a call without a key of the caller's sends a key derived
     * from that operation and its step, the same on every execution of the operation; without a
     * name the step is the method, the path and the call's occurrence in the execution
     * ({@code POST /charges#1}), which changes when the execution makes its calls in another
     * order. Outside an operation the name is not used.
     *
     * @param step the step's name, e.g. {@code charge-card}; 1 to 200 characters, not blank
     * @return a copy with the step name
     * @throws IllegalArgumentException when the name is blank or too long
     */
    public IdempotentRequest step(String step) {
        return new IdempotentRequest(method, uri, body, contentType, key, Keys.validateStep(step), headers);
    }

    /**
     * @param contentType the body's media type (defaults to the HTTP client's, JSON for objects)
     * @return a copy with the content type
     */
    public IdempotentRequest contentType(MediaType contentType) {
        return new IdempotentRequest(method, uri, body, Objects.requireNonNull(contentType, "contentType"), key, step, headers);
    }

    /**
     * Adds a request header sent on every attempt. The Idempotency-Key header cannot be set this
     * way; use {@link #key(String)}.
     *
     * @param name  header name
     * @param value header value
     * @return a copy with the header added
     */
    public IdempotentRequest header(String name, String value) {
        Objects.requireNonNull(name, "name");
        Objects.requireNonNull(value, "value");
        if (name.equalsIgnoreCase("Idempotency-Key")) {
            throw new IllegalArgumentException("set the Idempotency-Key with key(String), not header(...)");
        }
        Map<String, List<String>> copy = new LinkedHashMap<>(headers);
        copy.merge(name, List.of(value), (a, b) -> {
            List<String> merged = new java.util.ArrayList<>(a);
            merged.addAll(b);
            return List.copyOf(merged);
        });
        return new IdempotentRequest(method, uri, body, contentType, key, step, Map.copyOf(copy));
    }

    /** @return the method */
    public HttpMethod method() {
        return method;
    }

    /** @return the URI as given */
    public URI uri() {
        return uri;
    }

    /** @return the body, if any */
    public Optional<Object> body() {
        return Optional.ofNullable(body);
    }

    /** @return the content type, if set */
    public Optional<MediaType> contentType() {
        return Optional.ofNullable(contentType);
    }

    /** @return the caller's key, if one was set */
    public Optional<String> key() {
        return Optional.ofNullable(key);
    }

    /** @return the call's step name, if one was set */
    public Optional<String> step() {
        return Optional.ofNullable(step);
    }

    /** @return the extra headers */
    public Map<String, List<String>> headers() {
        return headers;
    }

    /** @return whether the body can be sent again on a retry (not a one-shot stream) */
    public boolean replayable() {
        return !(body instanceof InputStream || body instanceof ReadableByteChannel || body instanceof Publisher<?>);
    }
}
