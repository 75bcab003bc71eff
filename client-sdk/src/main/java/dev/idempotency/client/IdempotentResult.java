package dev.idempotency.client;

import java.util.Collections;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Optional;
import java.util.TreeMap;

/**
 * The outcome of one logical operation (CONTRACT C9): the final response, whether it was a
 * replay of a result the server had stored, how many attempts it took and the key they all
 * carried.
 *
 * @param <T> the type the body was decoded to
 */
public final class IdempotentResult<T> {

    private final int status;
    private final Map<String, List<String>> headers;
    private final byte[] bodyBytes;
    private final T body;
    private final boolean replayed;
    private final int attempts;
    private final String key;

    /**
     * A result as the client makes it; public so that code calling a client can be tested with
     * results of its own.
     *
     * @param status    the final response's status
     * @param headers   its headers (copied; names become case-insensitive)
     * @param bodyBytes its body as received
     * @param body      the body decoded to the caller's type
     * @param replayed  whether the server marked the response as a replay
     * @param attempts  the attempts made, the last included
     * @param key       the Idempotency-Key every attempt sent
     */
    public IdempotentResult(int status, Map<String, List<String>> headers, byte[] bodyBytes, T body,
                     boolean replayed, int attempts, String key) {
        this.status = status;
        TreeMap<String, List<String>> copy = new TreeMap<>(String.CASE_INSENSITIVE_ORDER);
        headers.forEach((name, values) -> copy.put(name, List.copyOf(values)));
        this.headers = Collections.unmodifiableMap(copy);
        this.bodyBytes = Objects.requireNonNull(bodyBytes, "bodyBytes");
        this.body = body;
        this.replayed = replayed;
        this.attempts = attempts;
        this.key = Objects.requireNonNull(key, "key");
    }

    /** @return the HTTP status of the final response */
    public int status() {
        return status;
    }

    /** @return the final response's headers; names are case-insensitive */
    public Map<String, List<String>> headers() {
        return headers;
    }

    /**
     * @param name a header name, any case
     * @return the header's first value
     */
    public Optional<String> header(String name) {
        List<String> values = headers.get(name);
        return values == null || values.isEmpty() ? Optional.empty() : Optional.of(values.get(0));
    }

    /** @return a copy of the body exactly as received (empty when there was none) */
    public byte[] bodyBytes() {
        return bodyBytes.clone();
    }

    /** @return the body decoded to the requested type; empty when the response had no body */
    public Optional<T> body() {
        return Optional.ofNullable(body);
    }

    /**
     * @return {@code true} when the server answered with a stored result
     *     ({@code Idempotent-Replayed: true}): the operation had already run, maybe on an attempt
     *     whose response was lost
     */
    public boolean replayed() {
        return replayed;
    }

    /** @return how many requests were sent for this operation, at least 1 */
    public int attempts() {
        return attempts;
    }

    /** @return the Idempotency-Key every attempt carried (unescaped) */
    public String key() {
        return key;
    }

    @Override
    public String toString() {
        return "IdempotentResult[status=" + status + ", replayed=" + replayed + ", attempts=" + attempts
            + ", key=" + key + ", body=" + bodyBytes.length + " bytes]";
    }
}
