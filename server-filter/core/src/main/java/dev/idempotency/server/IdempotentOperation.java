package dev.idempotency.server;

import io.micronaut.core.propagation.PropagatedContext;
import io.micronaut.core.propagation.PropagatedContextElement;
import io.micronaut.http.HttpRequest;

import java.nio.charset.StandardCharsets;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.util.Objects;
import java.util.Optional;
import java.util.UUID;

/**
 * The idempotency identity of the operation a request under the filter performs (CONTRACT M1):
 * the client's {@code Idempotency-Key}, the scope it was taken in, and the id of its record.
 * The same operation retried with the same key has the same identity, on any instance.
 *
 * <p>Code running under the filter reads it without parsing headers, on blocking and reactive
 * routes alike: as a controller argument of this type, or with {@link #current()} (the filter
 * puts it into Micronaut's propagated context before the route runs, so it follows the request
 * to the route's executor). Outside an operation there is none: a route without
 * {@link Idempotent}, a request without a key on a route where it is optional, or a
 * {@code failOpen} route whose store was down.
 *
 * <p>{@link #messageId(String)} derives the id of a message the operation publishes (CONTRACT
 * M2): the same step of the same operation always gets the same id, so a retry publishes the
 * same ids again and consumers see the duplicates for what they are.
 *
 * @param key      the client's key, parsed (the value of the sf-string); show it in traces and
 *                 message headers, never use it as a storage key
 * @param scope    who performed the operation and on which route, e.g.
 *                 {@code principal:alice POST /payments}; keys never cross scopes
 * @param recordId the id of the operation's record: 64 hex digits of SHA-256 over the scope and
 *                 the key, the key the store files it under
 */
public record IdempotentOperation(String key, String scope, String recordId) implements PropagatedContextElement {

    /** The request attribute the filter sets for the duration of the request. */
    public static final String ATTRIBUTE = "dev.idempotency.operation";

    private static final byte[] MESSAGE_TAG = "idempotency-message-id/v1".getBytes(StandardCharsets.US_ASCII);

    public IdempotentOperation {
        Objects.requireNonNull(key, "key");
        Objects.requireNonNull(scope, "scope");
        Objects.requireNonNull(recordId, "recordId");
    }

    /** @return the operation of the request in scope on this thread, if it runs under the filter */
    public static Optional<IdempotentOperation> current() {
        return PropagatedContext.find().flatMap(c -> c.find(IdempotentOperation.class));
    }

    /** @return the operation {@code request} performs, if it runs under the filter */
    public static Optional<IdempotentOperation> of(HttpRequest<?> request) {
        return request.getAttribute(ATTRIBUTE, IdempotentOperation.class);
    }

    /**
     * The id of the message this operation publishes for {@code step} (CONTRACT M2): a name-based
     * UUID (version 8, RFC 9562) of SHA-256 over the record id and the step. Deterministic: the
     * same operation and step give the same id on every attempt and every instance; two steps, or
     * two operations, give two ids.
     *
     * @param step a name for the message within the operation, e.g. {@code payment.initiated};
     *             not blank
     * @return the message id, e.g. {@code 3b0e9a1c-52f4-8d0e-9a6b-0c4f51e2d7a8}
     */
    public String messageId(String step) {
        if (step == null || step.isBlank()) {
            throw new IllegalArgumentException("a message needs a step name, was " + (step == null ? null : "blank"));
        }
        return nameBasedId(MESSAGE_TAG, recordId, step);
    }

    private static String nameBasedId(byte[] tag, String... parts) {
        MessageDigest sha = sha256();
        sha.update(tag);
        for (String part : parts) {
            byte[] bytes = part.getBytes(StandardCharsets.UTF_8);
            sha.update((byte) (bytes.length >>> 24));
            sha.update((byte) (bytes.length >>> 16));
            sha.update((byte) (bytes.length >>> 8));
            sha.update((byte) bytes.length);
            sha.update(bytes);
        }
        byte[] h = sha.digest();
        h[6] = (byte) ((h[6] & 0x0F) | 0x80); // version 8
        h[8] = (byte) ((h[8] & 0x3F) | 0x80); // variant 10
        long msb = 0;
        long lsb = 0;
        for (int i = 0; i < 8; i++) {
            msb = (msb << 8) | (h[i] & 0xFF);
            lsb = (lsb << 8) | (h[i + 8] & 0xFF);
        }
        return new UUID(msb, lsb).toString();
    }

    private static MessageDigest sha256() {
        try {
            return MessageDigest.getInstance("SHA-256");
        } catch (NoSuchAlgorithmException e) {
            throw new IllegalStateException("SHA-256 is required on every Java platform", e);
        }
    }

    @Override
    public String toString() {
        // the key is the client's; the record id's prefix names the operation in logs
        return "IdempotentOperation[" + scope + ", record " + recordId.substring(0, Math.min(12, recordId.length())) + "]";
    }
}
