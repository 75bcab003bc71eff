package dev.idempotency.server;

import java.net.URI;

/**
 * The stable codes of the rejections the filter answers itself (CONTRACT S20). Each is the
 * {@code code} member of an {@code application/problem+json} body and the fragment of its
 * {@code type} URI on the published contract page.
 */
public enum ProblemCode {
    /** 400: the route requires an Idempotency-Key and the request has none. */
    KEY_MISSING("idempotency-key-missing", 400, "Idempotency-Key header missing"),
    /** 400: the key is empty, too long, not printable ASCII, malformed, or sent more than once. */
    KEY_INVALID("idempotency-key-invalid", 400, "Invalid Idempotency-Key"),
    /** 422: the key was used before with a different request. */
    KEY_REUSED("idempotency-key-reused", 422, "Idempotency-Key reused with a different request"),
    /** 409: the original request with this key is still running. */
    REQUEST_IN_PROGRESS("idempotency-request-in-progress", 409, "Request with this Idempotency-Key in progress"),
    /** 413: the body is larger than the server fingerprints. */
    BODY_TOO_LARGE("idempotency-body-too-large", 413, "Request body too large for an idempotent request"),
    /** 400: the body could not be read: it does not decompress as its Content-Encoding says, or it ended early. */
    BODY_UNREADABLE("idempotency-body-unreadable", 400, "Request body unreadable"),
    /** 503: the idempotency store cannot be reached. */
    STORE_UNAVAILABLE("idempotency-store-unavailable", 503, "Idempotency store unavailable");

    private final String code;
    private final int status;
    private final String title;

    ProblemCode(String code, int status, String title) {
        this.code = code;
        this.status = status;
        this.title = title;
    }

    /** @return the stable code, e.g. {@code idempotency-key-reused} */
    public String code() {
        return code;
    }

    /** @return the HTTP status answered */
    public int status() {
        return status;
    }

    /** @return the problem's short human-readable title */
    public String title() {
        return title;
    }

    /**
     * The problem's {@code type}: the contract page with this code as its fragment. The published
     * contract page has an anchor for every code; the build checks it.
     *
     * @param contractPage the contract page, {@code idempotency.contract-url}
     * @return e.g. {@code https://idempotency.dev/contract/#idempotency-key-reused}
     */
    public URI type(URI contractPage) {
        return URI.create(contractPage + "#" + code); // not resolve(): an opaque URI (urn:...) would lose itself
    }
}
