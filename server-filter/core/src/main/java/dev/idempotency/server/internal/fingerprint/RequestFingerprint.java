package dev.idempotency.server.internal.fingerprint;

import io.micronaut.core.annotation.Internal;

import java.net.URLDecoder;
import java.nio.charset.Charset;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Collection;
import java.util.Comparator;
import java.util.List;
import java.util.Locale;
import java.util.Objects;
import java.util.TreeMap;

/**
 * The fingerprint that tells "the same request again" from "another request with the same key"
 * (CONTRACT S7).
 *
 * <h2>Format, version {@value #VERSION}</h2>
 * A fingerprint is 33 bytes: the version byte {@value #VERSION}, then a SHA-256 over, in this
 * order and each length-prefixed so no two inputs collide by concatenation: a domain tag; the
 * record's scope and key (see {@link #compute}); the method; the path; the query parameters,
 * decoded and sorted by name then value; the configured request headers, by lower-cased name;
 * and the body in canonical form:
 * <ul>
 *   <li>{@code application/json} and {@code application/*+json}: RFC 8785 (JCS) canonical JSON,
 *       after leaving out the members and array elements named by the ignored JSON Pointers
 *       (each pointer names a position in the request as sent), so member order, whitespace and
 *       number spelling ({@code 1.0}/{@code 1}, {@code 1e2}/{@code 100}) do not matter;</li>
 *   <li>{@code application/x-www-form-urlencoded}: the decoded pairs sorted by name, then
 *       value;</li>
 *   <li>{@code multipart/form-data} and {@code multipart/mixed}: the parts in order, each by its
 *       name, filename, Content-Type and decoded bytes, never the boundary, preamble or epilogue
 *       ({@link MultipartParts}); a body that is not multipart as its Content-Type says is an
 *       {@link UnreadableBodyException};</li>
 *   <li>anything else, and JSON or form bodies that do not parse: the raw bytes.</li>
 * </ul>
 * The filter computes it in the same SHA-256 pass as the record's store key (that digest's state
 * after the tag, scope and key), so every byte of a request is hashed once. Persistent stores
 * keep the version byte with the record; a format change gets a new version, so a record written
 * under another format never matches by accident.
 *
 * <p>Instances are single-use builders and not thread-safe.
 */
@Internal
public final class RequestFingerprint {

    /** The format version: the first byte of every fingerprint. */
    public static final byte VERSION = 2;
    /** The length of a fingerprint in bytes. */
    public static final int LENGTH = 33;

    private static final byte KIND_RAW = 'r';
    private static final byte KIND_JSON = 'j';
    private static final byte KIND_FORM = 'f';
    private static final byte KIND_MULTIPART = 'm';

    private final String method;
    private final String path;
    /** Made on the first parameter or header: most requests have neither. */
    private TreeMap<String, List<String>> query;
    private TreeMap<String, List<String>> headers;
    private JsonPointers ignored = JsonPointers.NONE;

    private RequestFingerprint(String method, String path) {
        this.method = Objects.requireNonNull(method, "method");
        this.path = Objects.requireNonNull(path, "path");
    }

    /**
     * @param method the HTTP method name
     * @param path   the request path, without the query
     * @return a builder for one fingerprint
     */
    public static RequestFingerprint of(String method, String path) {
        return new RequestFingerprint(method, path);
    }

    /** Adds a decoded query parameter with all its values. */
    public RequestFingerprint query(String name, List<String> values) {
        if (query == null) {
            query = new TreeMap<>();
        }
        query.computeIfAbsent(name, n -> new ArrayList<>()).addAll(values);
        return this;
    }

    /** Adds a request header to the fingerprint; the name is compared case-insensitively. */
    public RequestFingerprint header(String name, List<String> values) {
        if (headers == null) {
            headers = new TreeMap<>();
        }
        headers.computeIfAbsent(name.toLowerCase(Locale.ROOT), n -> new ArrayList<>()).addAll(values);
        return this;
    }

    /** JSON Pointers (RFC 6901) of members and elements left out of a JSON body's fingerprint. */
    public RequestFingerprint ignoringJsonPointers(Collection<String> pointers) {
        this.ignored = JsonPointers.compile(pointers);
        return this;
    }

    /** The same, already compiled (a route's policy keeps them). */
    public RequestFingerprint ignoring(JsonPointers pointers) {
        this.ignored = pointers;
        return this;
    }

    /**
     * Computes the fingerprint of a request outside any scope (empty scope and key), as tools
     * and benchmarks do; the filter's fingerprints are scoped to their record.
     *
     * @param contentType the body's media type, or {@code null}
     * @param body        the body bytes
     * @param length      how many of {@code body}'s bytes are the body
     * @return {@value #LENGTH} bytes: {@link #VERSION}, then SHA-256
     */
    public byte[] compute(String contentType, byte[] body, int length) {
        return RequestDigest.fingerprintOnly().fingerprint(this, contentType, body, length);
    }

    /** Writes this request's parts into {@code sink}, which already holds the tag, scope and key. */
    void writeTo(DigestSink sink, String contentType, byte[] body, int length) {
        sink.field(method.toUpperCase(Locale.ROOT));
        sink.field(path);
        writePairs(sink, query);
        writeHeaders(sink);
        writeBody(sink, contentType, body, length);
    }

    private void writeHeaders(DigestSink sink) {
        if (headers == null) {
            sink.field(0);
            return;
        }
        sink.field(headers.size());
        headers.forEach((name, values) -> {
            sink.field(name);
            sink.field(values.size());
            values.forEach(sink::field);
        });
    }

    private static void writePairs(DigestSink sink, TreeMap<String, List<String>> pairs) {
        if (pairs == null) {
            sink.field(0); // the count of an empty map: the same bytes
            return;
        }
        int count = 0;
        for (List<String> values : pairs.values()) {
            count += values.size();
        }
        sink.field(count);
        pairs.forEach((name, values) -> {
            List<String> sorted = values;
            if (values.size() > 1) {
                sorted = new ArrayList<>(values);
                sorted.sort(Comparator.naturalOrder());
            }
            for (String v : sorted) {
                sink.field(name);
                sink.field(v);
            }
        });
    }

    private void writeBody(DigestSink sink, String contentType, byte[] body, int length) {
        String mediaType = mediaType(contentType);
        if (length > 0 && isJson(mediaType)) {
            CanonicalBuffer canonical = CanonicalBuffer.forThisThread();
            try {
                JsonCanonicalizer.canonicalize(body, length, ignored, canonical);
                sink.write(KIND_JSON);
                sink.write(canonical.bytes, 0, canonical.length());
                return;
            } catch (JsonCanonicalizer.NotCanonicalizableException e) {
                // falls through to the raw bytes
            }
        } else if (length > 0 && MultipartParts.isMultipart(mediaType)) {
            sink.write(KIND_MULTIPART);
            MultipartParts.write(sink, contentType, body, length);
            return;
        } else if (length > 0 && mediaType.equals("application/x-www-form-urlencoded")) {
            TreeMap<String, List<String>> pairs = decodeForm(body, length, charset(contentType));
            if (pairs != null) {
                sink.write(KIND_FORM);
                writePairs(sink, pairs);
                return;
            }
        }
        sink.write(KIND_RAW);
        sink.write(body, 0, length);
    }

    private static TreeMap<String, List<String>> decodeForm(byte[] body, int length, Charset charset) {
        TreeMap<String, List<String>> pairs = new TreeMap<>();
        String text = new String(body, 0, length, charset);
        try {
            for (String pair : text.split("&")) {
                if (pair.isEmpty()) {
                    continue;
                }
                int eq = pair.indexOf('=');
                String name = eq < 0 ? pair : pair.substring(0, eq);
                String value = eq < 0 ? "" : pair.substring(eq + 1);
                pairs.computeIfAbsent(URLDecoder.decode(name, charset), n -> new ArrayList<>())
                    .add(URLDecoder.decode(value, charset));
            }
        } catch (IllegalArgumentException e) {
            return null;
        }
        return pairs;
    }

    static boolean isJson(String mediaType) {
        return mediaType.equals("application/json")
            || (mediaType.startsWith("application/") && mediaType.endsWith("+json"));
    }

    private static String mediaType(String contentType) {
        if (contentType == null) {
            return "";
        }
        int semi = contentType.indexOf(';');
        return (semi < 0 ? contentType : contentType.substring(0, semi)).trim().toLowerCase(Locale.ROOT);
    }

    private static Charset charset(String contentType) {
        if (contentType != null) {
            for (String param : contentType.split(";")) {
                String p = param.trim();
                if (p.regionMatches(true, 0, "charset=", 0, 8)) {
                    try {
                        return Charset.forName(p.substring(8).replace("\"", "").trim());
                    } catch (RuntimeException e) {
                        return StandardCharsets.UTF_8;
                    }
                }
            }
        }
        return StandardCharsets.UTF_8;
    }
}
