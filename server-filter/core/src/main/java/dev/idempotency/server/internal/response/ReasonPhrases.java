package dev.idempotency.server.internal.response;

import dev.idempotency.server.store.StoredResponse;
import io.micronaut.core.annotation.Nullable;
import io.micronaut.http.HttpResponse;
import io.micronaut.http.HttpStatus;
import io.micronaut.http.MutableHttpResponse;

/**
 * The reason phrase of a status line, so a replay's status line is the original's (CONTRACT S13).
 * A route's response normally carries the server's standard phrase for its status (Netty's
 * {@code 200 OK}), which a record does not keep; a phrase the route set itself is kept and sent
 * again. Thread-safe: the standard phrases are looked up once per status, and a race only looks
 * one up twice.
 */
final class ReasonPhrases {

    private static final String[] STANDARD = new String[600];
    /** Marks a status the server has no standard phrase for. */
    private static final String NONE = "";

    private ReasonPhrases() {
    }

    /**
     * @return the response's reason phrase when it is not the server's standard one for its status
     *     (and can be kept), else {@code null}
     */
    static @Nullable String own(HttpResponse<?> response) {
        String reason = response.reason();
        if (reason == null || reason.equals(standard(response.code())) || !StoredResponse.validReason(reason)) {
            return null;
        }
        return reason;
    }

    /** @return a new response with {@code status} and {@code reason}, or the server's standard phrase when it is null */
    static MutableHttpResponse<byte[]> response(int status, @Nullable String reason) {
        if (reason == null && standard(status) != null) {
            return HttpResponse.status(HttpStatus.valueOf(status));
        }
        return HttpResponse.status(status, reason);
    }

    /** @return what the server writes for {@code status} when the response sets no phrase, or null when it has none */
    private static @Nullable String standard(int status) {
        if (status < 100 || status >= STANDARD.length) {
            return null;
        }
        String known = STANDARD[status];
        if (known == null) {
            try {
                known = HttpResponse.status(HttpStatus.valueOf(status)).reason();
            } catch (IllegalArgumentException notAStandardStatus) {
                known = NONE;
            }
            STANDARD[status] = known == null ? NONE : known;
        }
        return known == NONE ? null : known;
    }
}
