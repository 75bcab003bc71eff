package dev.idempotency.server.internal.response;

import io.micronaut.core.annotation.Internal;
import dev.idempotency.server.IdempotencyConfiguration;
import dev.idempotency.server.IdempotencyConfigurationProperties;
import dev.idempotency.server.ProblemCode;
import dev.idempotency.server.store.StoredResponse;
import io.micronaut.context.annotation.Requires;
import io.micronaut.http.HttpHeaders;
import io.micronaut.http.MutableHttpResponse;
import jakarta.inject.Singleton;

import java.net.URI;
import java.nio.charset.StandardCharsets;
import java.time.Clock;
import java.time.Duration;
import java.time.ZoneOffset;
import java.time.format.DateTimeFormatter;
import java.util.List;
import java.util.Locale;
import java.util.Map;

/**
 * Every response the filter answers itself: replays of stored responses (CONTRACT S13, S15) and
 * the RFC 9457 {@code application/problem+json} rejections (S20) with a {@code describedby}
 * link to the contract page. Problem bodies are written here, not by the application's error
 * processor, so their shape ({@code type}, {@code title}, {@code status}, {@code detail},
 * {@code code}) is the same in every application; details are fixed texts, and request data
 * never appears in them.
 */
@Singleton
@Requires(property = IdempotencyConfigurationProperties.PREFIX + ".enabled", notEquals = "false")
@Internal
public final class Responses {

    static final String PROBLEM_JSON = "application/problem+json";
    /** The header that marks a replay whose body was not stored. */
    public static final String REPLAY_DETAIL_HEADER = "Idempotency-Replay";

    /** RFC 9110 IMF-fixdate, e.g. {@code Sun, 06 Nov 1994 08:49:37 GMT}. */
    private static final DateTimeFormatter IMF_FIXDATE =
        DateTimeFormatter.ofPattern("EEE, dd MMM yyyy HH:mm:ss 'GMT'", Locale.US).withZone(ZoneOffset.UTC);

    private final IdempotencyConfiguration config;
    private final URI contractUrl;
    private final String link;
    private final Clock clock;

    Responses(IdempotencyConfiguration config, Clock clock) {
        this.config = config;
        this.contractUrl = config.getContractUrl();
        this.link = "<" + contractUrl + ">; rel=\"describedby\"";
        this.clock = clock;
    }

    /** 400 {@code idempotency-key-missing} for the configured header (S3). */
    public MutableHttpResponse<byte[]> keyMissing() {
        return keyMissing("This operation requires an " + config.getHeaderName()
            + " header: generate one unique key (e.g. a UUIDv4) per operation and send it on every retry.");
    }

    /** 400 {@code idempotency-key-missing} with {@code detail}: where the route takes its key from, and what to send (S4). */
    public MutableHttpResponse<byte[]> keyMissing(String detail) {
        return problem(ProblemCode.KEY_MISSING, detail);
    }

    /** 400 {@code idempotency-key-invalid}: more than one field or value of the configured header. */
    public MutableHttpResponse<byte[]> keyRepeated(int count) {
        return keyRepeated(config.getHeaderName(), count);
    }

    /** 400 {@code idempotency-key-invalid}: more than one field or value of {@code header}. */
    public MutableHttpResponse<byte[]> keyRepeated(String header, int count) {
        return problem(ProblemCode.KEY_INVALID, "Send exactly one " + header
            + " header with one value; this request carried " + count + ".");
    }

    /** 400 {@code idempotency-key-invalid}: {@code reason} says what is wrong with the header's key, without the key itself. */
    public MutableHttpResponse<byte[]> keyInvalid(String reason) {
        return keyInvalidDetail(reason + ". A key is 1 to 255 printable ASCII characters, sent as a quoted string.");
    }

    /** 400 {@code idempotency-key-invalid} with {@code detail}. */
    public MutableHttpResponse<byte[]> keyInvalidDetail(String detail) {
        return problem(ProblemCode.KEY_INVALID, detail);
    }

    /** 413 {@code idempotency-body-too-large}. */
    public MutableHttpResponse<byte[]> bodyTooLarge() {
        return problem(ProblemCode.BODY_TOO_LARGE, "Idempotent requests may carry at most "
            + config.getMaxRequestBodySize() + " bytes of body.");
    }

    /** 400 {@code idempotency-body-unreadable}: the body does not decompress as its {@code Content-Encoding} says. */
    public MutableHttpResponse<byte[]> bodyNotDecodable() {
        return problem(ProblemCode.BODY_UNREADABLE, "The request body could not be decompressed as its Content-Encoding"
            + " says. Send it again, correctly encoded or uncompressed, with the same "
            + config.getHeaderName() + ": it was not used.");
    }

    /** 400 {@code idempotency-body-unreadable}: the body ended early, or its stream failed. */
    public MutableHttpResponse<byte[]> bodyUnreadable() {
        return problem(ProblemCode.BODY_UNREADABLE, "The request body could not be read to its end. Send it again"
            + " with the same " + config.getHeaderName() + ": it was not used.");
    }

    /** 400 {@code idempotency-body-unreadable}: the body is not what its Content-Type says, as {@code what} explains. */
    public MutableHttpResponse<byte[]> bodyMalformed(String what) {
        return problem(ProblemCode.BODY_UNREADABLE, "The request body could not be read as its Content-Type says: "
            + what + ". Send it again, well-formed, with the same " + config.getHeaderName() + ": it was not used.");
    }

    /** 422 {@code idempotency-key-reused}. */
    public MutableHttpResponse<byte[]> keyReused() {
        return problem(ProblemCode.KEY_REUSED, "This " + config.getHeaderName()
            + " was already used with a different request. Use a new key for a new operation;"
            + " retry an operation only with its original payload.");
    }

    /** 409 {@code idempotency-request-in-progress} with {@code Retry-After}. */
    public MutableHttpResponse<byte[]> inProgress(Duration retryAfter) {
        return problem(ProblemCode.REQUEST_IN_PROGRESS, "The original request with this "
            + config.getHeaderName() + " is still being processed. Retry after the time in Retry-After"
            + " with the same key and payload to get its result.", retryAfter);
    }

    /** 503 {@code idempotency-store-unavailable} with {@code Retry-After}. */
    public MutableHttpResponse<byte[]> storeUnavailable() {
        return storeUnavailable(config.getStoreUnavailableRetryAfter());
    }

    /** 503 {@code idempotency-store-unavailable} with {@code retryAfter} (whole seconds, at least 1). */
    public MutableHttpResponse<byte[]> storeUnavailable(Duration retryAfter) {
        return problem(ProblemCode.STORE_UNAVAILABLE, "The server cannot check this request's "
            + config.getHeaderName() + " right now, so it did not run it. Retry after the time in Retry-After"
            + " with the same key.", retryAfter);
    }

    /**
     * The stored response again: same status line, the stored headers, the same body bytes, plus
     * the replay marker; an omitted body is replayed empty with {@code Idempotency-Replay: omitted}.
     */
    public MutableHttpResponse<byte[]> replay(StoredResponse stored) {
        MutableHttpResponse<byte[]> response = ownResponse(stored.status(), stored.reason());
        for (Map.Entry<String, List<String>> h : stored.headers().entrySet()) {
            for (String v : h.getValue()) {
                response.header(h.getKey(), v);
            }
        }
        response.header(config.getReplayedHeaderName(), "true");
        if (stored.bodyOmitted()) {
            response.header(REPLAY_DETAIL_HEADER, "omitted");
            response.body(new byte[0]);
        } else {
            response.body(stored.body());
        }
        return response;
    }

    /**
     * A response the filter answers itself: the status with the server's standard reason phrase
     * and a {@code Date} header (RFC 9110 section 6.6.1), which Micronaut adds only to responses
     * a route produced.
     */
    private MutableHttpResponse<byte[]> ownResponse(int status) {
        return ownResponse(status, null);
    }

    private MutableHttpResponse<byte[]> ownResponse(int status, String reason) {
        return ReasonPhrases.response(status, reason).header(HttpHeaders.DATE, IMF_FIXDATE.format(clock.instant()));
    }

    private MutableHttpResponse<byte[]> problem(ProblemCode code, String detail) {
        String json = "{\"type\":" + quote(code.type(contractUrl).toString())
            + ",\"title\":" + quote(code.title())
            + ",\"status\":" + code.status()
            + ",\"detail\":" + quote(detail)
            + ",\"code\":" + quote(code.code()) + "}";
        return ownResponse(code.status())
            .header(HttpHeaders.CONTENT_TYPE, PROBLEM_JSON)
            .header(HttpHeaders.LINK, link)
            .body(json.getBytes(StandardCharsets.UTF_8));
    }

    private MutableHttpResponse<byte[]> problem(ProblemCode code, String detail, Duration retryAfter) {
        return problem(code, detail).header(HttpHeaders.RETRY_AFTER, Long.toString(retryAfterSeconds(retryAfter)));
    }

    /** Whole seconds, rounded up, at least 1 (CONTRACT S11). */
    public static long retryAfterSeconds(Duration d) {
        long millis = Math.max(0, d.toMillis());
        return Math.max(1, (millis + 999) / 1000);
    }

    static String quote(String s) {
        StringBuilder sb = new StringBuilder(s.length() + 2).append('"');
        for (int i = 0; i < s.length(); i++) {
            char c = s.charAt(i);
            switch (c) {
                case '"' -> sb.append("\\\"");
                case '\\' -> sb.append("\\\\");
                case '\n' -> sb.append("\\n");
                case '\r' -> sb.append("\\r");
                case '\t' -> sb.append("\\t");
                default -> {
                    if (c < 0x20) {
                        sb.append(String.format("\\u%04x", (int) c));
                    } else {
                        sb.append(c);
                    }
                }
            }
        }
        return sb.append('"').toString();
    }
}
