package dev.idempotency.server;

import io.micronaut.http.HttpHeaders;
import io.micronaut.http.HttpResponse;
import io.micronaut.http.MutableHttpResponse;

import java.net.URI;
import java.nio.charset.StandardCharsets;
import java.time.Clock;
import java.time.Duration;
import java.time.ZoneOffset;
import java.time.format.DateTimeFormatter;
import java.util.Locale;

/**
 * Renders {@link ProblemCode}s as RFC 9457 {@code application/problem+json} responses with a
 * {@code describedby} link to the contract page. The body is written here, not by the
 * application's error processor, so its shape ({@code type}, {@code title}, {@code status},
 * {@code detail}, {@code code}) is the same in every application. Details are fixed texts
 * chosen by the filter; request data never appears in them.
 */
@jakarta.inject.Singleton
@io.micronaut.context.annotation.Requires(property = IdempotencyConfigurationProperties.PREFIX + ".enabled", notEquals = "false")
final class Problems {

    static final String PROBLEM_JSON = "application/problem+json";

    /** RFC 9110 IMF-fixdate, e.g. {@code Sun, 06 Nov 1994 08:49:37 GMT}. */
    private static final DateTimeFormatter IMF_FIXDATE =
        DateTimeFormatter.ofPattern("EEE, dd MMM yyyy HH:mm:ss 'GMT'", Locale.US).withZone(ZoneOffset.UTC);

    private final URI contractUrl;
    private final String link;
    private final Clock clock;

    Problems(IdempotencyConfiguration config, Clock clock) {
        this.contractUrl = config.getContractUrl();
        this.link = "<" + contractUrl + ">; rel=\"describedby\"";
        this.clock = clock;
    }

    /**
     * A response the filter answers itself: the status with the server's standard reason
     * phrase and a {@code Date} header (RFC 9110 section 6.6.1), which Micronaut adds only to
     * responses a route produced.
     */
    MutableHttpResponse<byte[]> ownResponse(int status) {
        MutableHttpResponse<byte[]> response = HttpResponse.<byte[]>ok().status(status);
        return response.header(HttpHeaders.DATE, IMF_FIXDATE.format(clock.instant()));
    }

    MutableHttpResponse<byte[]> response(ProblemCode code, String detail) {
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

    MutableHttpResponse<byte[]> response(ProblemCode code, String detail, Duration retryAfter) {
        return response(code, detail).header(HttpHeaders.RETRY_AFTER, Long.toString(retryAfterSeconds(retryAfter)));
    }

    /** Whole seconds, rounded up, at least 1 (CONTRACT S11). */
    static long retryAfterSeconds(Duration d) {
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
