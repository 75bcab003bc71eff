package dev.idempotency.server;

import java.util.HexFormat;

/**
 * The one SHA-256 pass of a request (CONTRACT S6, S7): it hashes a domain tag, the scope (who
 * the caller is and how they were identified, the method, the route template) and the key,
 * each as a field of its own, takes the store key from a snapshot of that state (64 hex
 * digits), and then goes on with the request's parts into the fingerprint, so every byte of the
 * request is hashed once. Single use; not thread-safe.
 */
final class RequestDigest {

    /** Separates this digest from every other use of SHA-256; the version is the fingerprint's. */
    private static final String TAG = "idempotency-key/" + RequestFingerprint.VERSION;

    private final DigestSink sink;
    private final String storeKey;

    private RequestDigest(DigestSink sink, String storeKey) {
        this.sink = sink;
        this.storeKey = storeKey;
    }

    /** How the caller was identified: by the application's resolver. */
    static final byte CALLER_RESOLVED = 'c';
    /** How the caller was identified: by the authenticated principal. */
    static final byte CALLER_PRINCIPAL = 'p';
    /** How the caller was identified: not at all, the shared anonymous scope. */
    static final byte CALLER_ANONYMOUS = 'a';

    /**
     * @param callerKind one of the {@code CALLER_} constants
     * @param caller     the caller's identity
     * @param method     the request method
     * @param template   the route's URI template
     * @param key        the parsed Idempotency-Key
     * @return the digest, with the store key taken
     */
    static RequestDigest begin(byte callerKind, String caller, String method, String template, String key) {
        DigestSink sink = start(callerKind, caller, method, template, key);
        return new RequestDigest(sink, HexFormat.of().formatHex(sink.finishCopy()));
    }

    /** The same pass without a store key, for a fingerprint alone (anonymous, empty scope and key). */
    static RequestDigest fingerprintOnly() {
        return new RequestDigest(start(CALLER_ANONYMOUS, "", "", "", ""), null);
    }

    private static DigestSink start(byte callerKind, String caller, String method, String template, String key) {
        DigestSink sink = new DigestSink();
        sink.field(TAG);
        sink.write(callerKind);
        sink.field(caller);
        sink.field(method);
        sink.field(template);
        sink.field(key);
        return sink;
    }

    /** @return the fixed-length store key: hex SHA-256 of the tag, the scope and the key */
    String storeKey() {
        return storeKey;
    }

    /** Ends the pass with the request's parts; see {@link RequestFingerprint} for the format. */
    byte[] fingerprint(RequestFingerprint request, String contentType, byte[] body, int length) {
        request.writeTo(sink, contentType, body, length);
        byte[] hash = sink.finish();
        byte[] fingerprint = new byte[RequestFingerprint.LENGTH];
        fingerprint[0] = RequestFingerprint.VERSION;
        System.arraycopy(hash, 0, fingerprint, 1, hash.length);
        return fingerprint;
    }
}
