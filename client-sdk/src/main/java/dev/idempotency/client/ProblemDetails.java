package dev.idempotency.client;

import io.micronaut.core.annotation.Nullable;

/**
 * An RFC 9457 problem body ({@code application/problem+json}) as the server filter sends it
 * (CONTRACT S20): {@code type}, {@code title}, {@code status}, {@code detail} and the stable
 * {@code code}. Members the body does not have are {@code null} ({@code status} is 0).
 *
 * @param type   the problem type URI, e.g. {@code https://idempotency.dev/contract/#idempotency-key-reused}
 * @param code   the stable code, e.g. {@code idempotency-key-reused}
 * @param title  the short summary
 * @param detail the explanation
 * @param status the HTTP status the body states
 */
public record ProblemDetails(@Nullable String type, @Nullable String code, @Nullable String title,
                             @Nullable String detail, int status) {

    /** The code of the filter's 409: the original request with this key is still running. */
    public static final String REQUEST_IN_PROGRESS = "idempotency-request-in-progress";
    /** The code of the filter's 422: the key was used before with a different request. */
    public static final String KEY_REUSED = "idempotency-key-reused";
    /** The code of the filter's 503: its store is unavailable. */
    public static final String STORE_UNAVAILABLE = "idempotency-store-unavailable";

    /**
     * @param code a problem code
     * @return whether this problem has that code
     */
    public boolean hasCode(String code) {
        return code.equals(this.code);
    }
}
