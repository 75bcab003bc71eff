package dev.idempotency.server.internal.fingerprint;

import io.micronaut.core.annotation.Internal;
import java.nio.charset.StandardCharsets;

/**
 * The one SHA-256 pass of a request (CONTRACT S6, S7): it hashes a domain tag, the scope (who
 * the caller is and how they were identified, the method, the route template) and the key,
 * each as a field of its own, takes the store key from a snapshot of that state (64 hex
 * digits), and then goes on with the request's parts into the fingerprint, so every byte of the
 * request is hashed once. Single use, and not thread-safe. It hashes in the thread's own
 * {@link DigestSink#forThisThread() sink}; a digest finished after its thread began another
 * one, or on another thread, hashes its scope again in a sink of its own, so it is never wrong,
 * only slower.
 */
@Internal
public final class RequestDigest {

    /** Separates this digest from every other use of SHA-256; the version is the fingerprint's. */
    private static final String TAG = "idempotency-key/" + RequestFingerprint.VERSION;

    private static final byte[] HEX = "0123456789abcdef".getBytes(StandardCharsets.ISO_8859_1);

    private final DigestSink sink;
    private final Thread thread;
    private final int use;
    private final String storeKey;
    private final byte callerKind;
    private final String caller;
    private final String method;
    private final String template;
    private final String key;

    private RequestDigest(DigestSink sink, byte callerKind, String caller, String method, String template, String key,
                          boolean withStoreKey) {
        this.sink = sink;
        this.thread = Thread.currentThread();
        this.use = sink.use();
        this.callerKind = callerKind;
        this.caller = caller;
        this.method = method;
        this.template = template;
        this.key = key;
        this.storeKey = withStoreKey ? hex(sink.finishCopy()) : null;
    }

    /** How the caller was identified: by the application's resolver. */
    public static final byte CALLER_RESOLVED = 'c';
    /** How the caller was identified: by the authenticated principal. */
    public static final byte CALLER_PRINCIPAL = 'p';
    /** How the caller was identified: not at all, the shared anonymous scope. */
    public static final byte CALLER_ANONYMOUS = 'a';

    /**
     * @param callerKind one of the {@code CALLER_} constants
     * @param caller     the caller's identity
     * @param method     the request method
     * @param template   the route's URI template
     * @param key        the parsed Idempotency-Key
     * @return the digest, with the store key taken
     */
    public static RequestDigest begin(byte callerKind, String caller, String method, String template, String key) {
        return new RequestDigest(start(DigestSink.forThisThread(), callerKind, caller, method, template, key),
            callerKind, caller, method, template, key, true);
    }

    /** The same pass without a store key, for a fingerprint alone (anonymous, empty scope and key). */
    static RequestDigest fingerprintOnly() {
        return new RequestDigest(start(DigestSink.forThisThread(), CALLER_ANONYMOUS, "", "", "", ""),
            CALLER_ANONYMOUS, "", "", "", "", false);
    }

    private static DigestSink start(DigestSink sink, byte callerKind, String caller, String method, String template,
                                    String key) {
        sink.field(TAG);
        sink.write(callerKind);
        sink.field(caller);
        sink.field(method);
        sink.field(template);
        sink.field(key);
        return sink;
    }

    /** @return {@code bytes} as lowercase hexadecimal digits, in one Latin-1 string built without a builder */
    static String hex(byte[] bytes) {
        byte[] digits = new byte[bytes.length * 2];
        for (int i = 0; i < bytes.length; i++) {
            int b = bytes[i];
            digits[2 * i] = HEX[(b >>> 4) & 0xF];
            digits[2 * i + 1] = HEX[b & 0xF];
        }
        return new String(digits, StandardCharsets.ISO_8859_1);
    }

    /** @return the fixed-length store key: hex SHA-256 of the tag, the scope and the key */
    public String storeKey() {
        return storeKey;
    }

    /** Ends the pass with the request's parts; see {@link RequestFingerprint} for the format. */
    public byte[] fingerprint(RequestFingerprint request, String contentType, byte[] body, int length) {
        // the sink, unless this is another thread or the thread began another digest since: then start over
        DigestSink s = thread == Thread.currentThread() && sink.use() == use ? sink
            : start(new DigestSink(), callerKind, caller, method, template, key);
        request.writeTo(s, contentType, body, length);
        byte[] hash = s.finish();
        byte[] fingerprint = new byte[RequestFingerprint.LENGTH];
        fingerprint[0] = RequestFingerprint.VERSION;
        System.arraycopy(hash, 0, fingerprint, 1, hash.length);
        return fingerprint;
    }
}
