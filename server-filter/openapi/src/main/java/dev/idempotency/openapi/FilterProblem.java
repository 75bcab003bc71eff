package dev.idempotency.openapi;

import java.util.ArrayList;
import java.util.List;

/**
 * The rejections the filter answers itself (CONTRACT S20), as the document describes them. A
 * copy of the filter's {@code ProblemCode} table, because the filter is not on the annotation
 * processor path; {@code FilterProblemTest} keeps the two equal.
 */
enum FilterProblem {
    KEY_MISSING("idempotency-key-missing", 400, "Idempotency-Key header missing",
        "the route requires an Idempotency-Key and the request has none",
        "This operation requires an {header} header: generate one unique key (e.g. a UUIDv4) per operation and"
            + " send it on every retry."),
    KEY_INVALID("idempotency-key-invalid", 400, "Invalid Idempotency-Key",
        "the key is empty, longer than 255 characters, not printable ASCII, malformed, or sent more than once",
        "Send exactly one {header} header with one value; this request carried 2."),
    BODY_UNREADABLE("idempotency-body-unreadable", 400, "Request body unreadable",
        "the body does not decompress as its Content-Encoding says, or ended early; nothing ran, send it again"
            + " with the same key",
        "The request body could not be read to its end. Send it again with the same {header}: it was not used."),
    REQUEST_IN_PROGRESS("idempotency-request-in-progress", 409, "Request with this Idempotency-Key in progress",
        "the original request with this key is still running; retry after Retry-After with the same key and payload",
        "The original request with this {header} is still being processed. Retry after the time in Retry-After"
            + " with the same key and payload to get its result."),
    BODY_TOO_LARGE("idempotency-body-too-large", 413, "Request body too large for an idempotent request",
        "the body is larger than the server fingerprints; do not retry it",
        "Idempotent requests may carry at most {max} bytes of body."),
    KEY_REUSED("idempotency-key-reused", 422, "Idempotency-Key reused with a different request",
        "the key was used before with a different request; use a new key for a new operation, never retry this",
        "This {header} was already used with a different request. Use a new key for a new operation;"
            + " retry an operation only with its original payload."),
    STORE_UNAVAILABLE("idempotency-store-unavailable", 503, "Idempotency store unavailable",
        "the idempotency store cannot be reached and the request did not run; retry after Retry-After with the same key",
        "The server cannot check this request's {header} right now, so it did not run it. Retry after the time in"
            + " Retry-After with the same key.");

    final String code;
    final int status;
    final String title;
    final String meaning;
    /**
     * The {@code detail} the filter sends, with {@code {header}} for the key's header name and
     * {@code {max}} for the body cap ({@code FilterProblemTest} compares it with the filter's own
     * responses); for {@code idempotency-key-invalid}, the answer to a key sent twice.
     */
    final String detail;

    FilterProblem(String code, int status, String title, String meaning, String detail) {
        this.code = code;
        this.status = status;
        this.title = title;
        this.meaning = meaning;
        this.detail = detail;
    }

    /** @return the detail with the header name and the body cap filled in */
    String detail(String headerName, String maxBodySize) {
        return detail.replace("{header}", headerName).replace("{max}", maxBodySize);
    }

    /** @return whether the filter can answer this on a route with the given members */
    boolean appliesTo(boolean required, boolean failOpen) {
        return switch (this) {
            case KEY_MISSING -> required;
            case STORE_UNAVAILABLE -> !failOpen;
            default -> true;
        };
    }

    /** @return whether the answer carries {@code Retry-After} */
    boolean retryAfter() {
        return this == REQUEST_IN_PROGRESS || this == STORE_UNAVAILABLE;
    }

    /** @return the problems the filter can answer on such a route, in status order */
    static List<FilterProblem> applicable(boolean required, boolean failOpen) {
        List<FilterProblem> result = new ArrayList<>();
        for (FilterProblem p : values()) {
            if (p.appliesTo(required, failOpen)) {
                result.add(p);
            }
        }
        return result;
    }
}
