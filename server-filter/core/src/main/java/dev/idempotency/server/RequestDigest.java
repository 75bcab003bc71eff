package dev.idempotency.server;

import java.util.HexFormat;

/**
 * The one SHA-256 pass of a request (CONTRACT S6, S7): it hashes a domain tag, the scope and
 * the key, takes the store key from a snapshot of that state (64 hex digits), and then goes on
 * with the request's parts into the fingerprint, so every byte of the request is hashed once.
 * Single use; not thread-safe.
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

    /**
     * @param scope the record's scope (caller, method, route template)
     * @param key   the parsed Idempotency-Key
     * @return the digest, with the store key taken
     */
    static RequestDigest begin(String scope, String key) {
        DigestSink sink = start(scope, key);
        return new RequestDigest(sink, HexFormat.of().formatHex(sink.fork().finish()));
    }

    /** The same pass without a store key, for a fingerprint alone. */
    static RequestDigest fingerprintOnly(String scope, String key) {
        return new RequestDigest(start(scope, key), null);
    }

    private static DigestSink start(String scope, String key) {
        DigestSink sink = new DigestSink();
        sink.field(TAG);
        sink.field(scope);
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
