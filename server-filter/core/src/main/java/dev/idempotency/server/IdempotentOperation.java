package dev.idempotency.server;

import dev.idempotency.context.OperationContext;
import io.micronaut.core.propagation.PropagatedContext;
import io.micronaut.core.propagation.PropagatedContextElement;
import io.micronaut.http.HttpRequest;

import java.util.Objects;
import java.util.Optional;

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
     * two operations, give two ids. The function is the one the client SDK derives the keys of
     * downstream calls with (CONTRACT C11, {@link OperationContext}), under another tag.
     *
     * @param step a name for the message within the operation, e.g. {@code payment.initiated};
     *             1 to 200 characters, not blank
     * @return the message id, e.g. {@code 3b0e9a1c-52f4-8d0e-9a6b-0c4f51e2d7a8}
     */
    public String messageId(String step) {
        return OperationContext.messageId(recordId, step);
    }

    @Override
    public String toString() {
        // the key is the client's; the record id's prefix names the operation in logs
        return "IdempotentOperation[" + scope + ", record " + recordId.substring(0, Math.min(12, recordId.length())) + "]";
    }
}
