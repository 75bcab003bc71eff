package dev.idempotency.server.store;

import io.micronaut.core.annotation.Nullable;

import java.util.Arrays;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;

/**
 * A completed response as the store keeps it: status and its reason phrase, the allow-listed
 * headers in the order they were sent, and the body bytes exactly as written to the client.
 *
 * <p>Immutable: the header map and lists are unmodifiable copies (header values must not be
 * {@code null}) and the body array is copied on the way in and out.
 *
 * @param status       the HTTP status code
 * @param headers      header name to values, in the order sent
 * @param body         the body bytes (empty when there was none or when omitted)
 * @param bodyOmitted  {@code true} when the body was too large or streamed and was not kept
 * @param reason       the status line's reason phrase when the route set one of its own, {@code null}
 *                     when it was the server's standard phrase for the status (the usual case, which
 *                     costs a store nothing); 1-256 characters of visible ASCII and spaces
 * @param traceparent  the W3C {@code traceparent} of the span that executed the operation, kept with
 *                     the record when tracing is on so that a replay can link to it (CONTRACT O4), or
 *                     {@code null}; exactly 55 characters ({@code 00-<trace id>-<span id>-<flags>})
 */
public record StoredResponse(int status, Map<String, List<String>> headers, byte[] body, boolean bodyOmitted,
                             @Nullable String reason, @Nullable String traceparent) {

    /** The longest reason phrase kept. */
    public static final int MAX_REASON_LENGTH = 256;

    /** A response with the server's standard reason phrase for its status. */
    public StoredResponse(int status, Map<String, List<String>> headers, byte[] body, boolean bodyOmitted) {
        this(status, headers, body, bodyOmitted, null, null);
    }

    /** A response with a reason phrase of the route's own (or {@code null}), without a trace context. */
    public StoredResponse(int status, Map<String, List<String>> headers, byte[] body, boolean bodyOmitted,
                          @Nullable String reason) {
        this(status, headers, body, bodyOmitted, reason, null);
    }

    public StoredResponse {
        if (status < 100 || status > 599) {
            throw new IllegalArgumentException("status must be 100-599, was " + status);
        }
        Objects.requireNonNull(headers, "headers");
        Objects.requireNonNull(body, "body");
        if (bodyOmitted && body.length > 0) {
            throw new IllegalArgumentException("an omitted body must be empty");
        }
        if (reason != null && !validReason(reason)) {
            throw new IllegalArgumentException("a reason phrase must be 1-" + MAX_REASON_LENGTH
                + " characters of visible ASCII and spaces, was \"" + reason + "\"");
        }
        if (traceparent != null && !validTraceparent(traceparent)) {
            throw new IllegalArgumentException("a traceparent must be 00-<32 hex>-<16 hex>-<2 hex>, lowercase, was \""
                + traceparent + "\"");
        }
        headers = copyOf(headers);
        body = body.clone();
    }

    /**
     * @param traceparent a W3C trace context header value
     * @return whether a {@code StoredResponse} can keep it: version {@code 00}, a 32-digit trace id
     *     and a 16-digit span id, neither all zeros, and two digits of flags, lowercase hex
     */
    public static boolean validTraceparent(String traceparent) {
        if (traceparent.length() != 55 || !traceparent.startsWith("00-") || traceparent.charAt(35) != '-'
            || traceparent.charAt(52) != '-') {
            return false;
        }
        boolean traceZero = true;
        boolean spanZero = true;
        for (int i = 3; i < 55; i++) {
            if (i == 35 || i == 52) {
                continue;
            }
            char c = traceparent.charAt(i);
            if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'))) {
                return false;
            }
            if (c != '0' && i < 35) {
                traceZero = false;
            } else if (c != '0' && i < 52) {
                spanZero = false;
            }
        }
        return !traceZero && !spanZero;
    }

    /** @return this response with {@code traceparent} as the executing run's trace context (see the component) */
    public StoredResponse withTraceparent(@Nullable String traceparent) {
        return new StoredResponse(status, headers, body, bodyOmitted, reason, traceparent);
    }

    /**
     * @param reason a status line's reason phrase
     * @return whether a {@code StoredResponse} can keep it: 1-{@value #MAX_REASON_LENGTH} characters,
     *     each a space or visible ASCII (RFC 9112's reason-phrase, without obs-text)
     */
    public static boolean validReason(String reason) {
        if (reason.isEmpty() || reason.length() > MAX_REASON_LENGTH) {
            return false;
        }
        for (int i = 0; i < reason.length(); i++) {
            char c = reason.charAt(i);
            if (c != ' ' && (c < 0x21 || c > 0x7e)) {
                return false;
            }
        }
        return true;
    }

    /** @return this response with its body dropped and marked omitted (status, reason and headers kept) */
    public StoredResponse withoutBody() {
        return new StoredResponse(status, headers, new byte[0], true, reason, traceparent);
    }

    /**
     * An unmodifiable copy in the same order, each value list unmodifiable too. The usual case,
     * one header (Content-Type), costs two small objects; a list that is already unmodifiable
     * ({@code List.of}) is kept as it is.
     */
    private static Map<String, List<String>> copyOf(Map<String, List<String>> headers) {
        if (headers.isEmpty()) {
            return Map.of();
        }
        if (headers.size() == 1) {
            Map.Entry<String, List<String>> only = headers.entrySet().iterator().next();
            String name = Objects.requireNonNull(only.getKey(), "header name");
            return Map.of(name, values(name, only.getValue()));
        }
        Map<String, List<String>> copy = new LinkedHashMap<>(headers.size() * 2);
        headers.forEach((name, values) -> copy.put(Objects.requireNonNull(name, "header name"),
            values(name, values)));
        return Collections.unmodifiableMap(copy);
    }

    private static List<String> values(String name, List<String> values) {
        if (values == null) {
            throw new NullPointerException("header " + name + " has no value list");
        }
        try {
            return List.copyOf(values);
        } catch (NullPointerException e) {
            throw new NullPointerException("header " + name + " has a null value");
        }
    }

    /** @return a copy of the body bytes */
    @Override
    public byte[] body() {
        return body.clone();
    }

    /** @return the body length without copying it */
    public int bodyLength() {
        return body.length;
    }

    /**
     * Copies the body into {@code target} at {@code offset}, without an intermediate copy.
     *
     * @param target where to copy
     * @param offset where the body starts in {@code target}
     * @throws IndexOutOfBoundsException when {@code target} has no room for it
     */
    public void copyBodyTo(byte[] target, int offset) {
        System.arraycopy(body, 0, target, offset, body.length);
    }

    @Override
    public boolean equals(Object o) {
        return o instanceof StoredResponse other
            && status == other.status
            && bodyOmitted == other.bodyOmitted
            && headers.equals(other.headers)
            && Objects.equals(reason, other.reason)
            && Objects.equals(traceparent, other.traceparent)
            && Arrays.equals(body, other.body);
    }

    @Override
    public int hashCode() {
        return Objects.hash(status, headers, bodyOmitted, reason, traceparent) * 31 + Arrays.hashCode(body);
    }

    @Override
    public String toString() {
        return "StoredResponse[status=" + status + (reason == null ? "" : " " + reason) + ", headers=" + headers + ", body=" + body.length
            + " bytes" + (bodyOmitted ? " (omitted)" : "") + (traceparent == null ? "" : ", traceparent=" + traceparent) + "]";
    }
}
