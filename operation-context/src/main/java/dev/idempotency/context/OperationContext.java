package dev.idempotency.context;

import io.micronaut.core.propagation.PropagatedContext;
import io.micronaut.core.propagation.PropagatedContextElement;

import java.nio.charset.StandardCharsets;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.util.Objects;
import java.util.Optional;
import java.util.UUID;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicInteger;

/**
 * One execution of an idempotent operation, as code downstream of the server filter sees it
 * (CONTRACT C11, M2). The server filter puts a new one into Micronaut's {@link PropagatedContext}
 * each time it runs a handler for an operation; the client SDK reads it to send downstream calls
 * a key derived from the operation instead of a fresh one. This module is all the two share: the
 * client does not depend on the server.
 *
 * <p>What is guaranteed:
 * <ul>
 *   <li><b>Stable across executions.</b> The {@linkplain #operationId() operation id} is made from
 *       the operation's scope and key, which survive a released 5xx, a takeover and a
 *       transactional retry; so {@link #derivedKey(String)} and {@link #messageId(String)} give
 *       the same value for the same step on every execution, on any instance.</li>
 *   <li><b>Distinct.</b> Two steps, or two operations, get two values (SHA-256, name-based UUIDs of
 *       version 8, RFC 9562); a key and a message id of the same step are different values
 *       (each derivation has its own tag).</li>
 *   <li><b>Recognisable.</b> A derived key starts with {@value #DERIVED_KEY_PREFIX}, a prefix the
 *       client SDK refuses in keys that callers give it, so no caller-made key equals one. It is a
 *       valid Idempotency-Key (47 printable ASCII characters without quotes, spaces or commas).</li>
 *   <li><b>Default step names count per execution.</b> {@link #defaultStep} numbers calls with the
 *       same method and URI template in the order this execution makes them; the count starts
 *       again with the next execution.</li>
 * </ul>
 * Thread-safe: an execution may make calls from several threads.
 */
public final class OperationContext implements PropagatedContextElement {

    /** How every key that {@link #derivedKey(String)} makes begins; reserved for derived keys. */
    public static final String DERIVED_KEY_PREFIX = "derived-v1-";

    private static final byte[] MESSAGE_TAG = "idempotency-message-id/v1".getBytes(StandardCharsets.US_ASCII);
    private static final byte[] KEY_TAG = "idempotency-derived-key/v1".getBytes(StandardCharsets.US_ASCII);
    private static final int MAX_STEP_LENGTH = 200;

    private final String operationId;
    private final ConcurrentHashMap<String, AtomicInteger> occurrences = new ConcurrentHashMap<>();

    private OperationContext(String operationId) {
        this.operationId = operationId;
    }

    /**
     * Starts the context of one execution. The server filter calls it before each run of a
     * handler; anything else calls it only to run code as if under an operation (tests, a
     * worker that resumes an operation of its own).
     *
     * @param operationId the operation's stable id: the server filter passes the record id, 64 hex
     *                    digits of SHA-256 over scope and key; not blank
     * @return a new execution context, with no calls counted yet
     */
    public static OperationContext start(String operationId) {
        Objects.requireNonNull(operationId, "operationId");
        if (operationId.isBlank()) {
            throw new IllegalArgumentException("an operation id must not be blank");
        }
        return new OperationContext(operationId);
    }

    /** @return the execution in scope on this thread, if the code runs under an operation */
    public static Optional<OperationContext> current() {
        return PropagatedContext.find().flatMap(c -> c.find(OperationContext.class));
    }

    /**
     * @param key an Idempotency-Key
     * @return whether it has the form of a derived key (caller keys of this form are refused)
     */
    public static boolean isDerived(String key) {
        return key != null && key.startsWith(DERIVED_KEY_PREFIX);
    }

    /** @return the operation's stable id, the same on every execution of the operation */
    public String operationId() {
        return operationId;
    }

    /**
     * The Idempotency-Key a downstream call of {@code step} sends (CONTRACT C11):
     * {@value #DERIVED_KEY_PREFIX} and a name-based UUID of SHA-256 over a tag of its own, the
     * operation id and the step.
     *
     * @param step the step's name, e.g. {@code charge-card}; 1 to 200 characters
     * @return the key, e.g. {@code derived-v1-3b0e9a1c-52f4-8d0e-9a6b-0c4f51e2d7a8}
     */
    public String derivedKey(String step) {
        return DERIVED_KEY_PREFIX + nameBasedId(KEY_TAG, operationId, checkStep(step));
    }

    /**
     * The id of the message this operation publishes for {@code step} (CONTRACT M2): a name-based
     * UUID of SHA-256 over a tag of its own, the operation id and the step. The same function as
     * {@link #derivedKey(String)}, with another tag.
     *
     * @param step a name for the message within the operation, e.g. {@code payment.initiated}; 1
     *             to 200 characters
     * @return the message id
     */
    public String messageId(String step) {
        return messageId(operationId, step);
    }

    /**
     * {@link #messageId(String)} for an operation id, without an execution (the server's
     * {@code IdempotentOperation.messageId} delegates here).
     *
     * @param operationId the operation's id
     * @param step        the message's step name; 1 to 200 characters
     * @return the message id
     */
    public static String messageId(String operationId, String step) {
        return nameBasedId(MESSAGE_TAG, Objects.requireNonNull(operationId, "operationId"), checkStep(step));
    }

    /**
     * The default step name of a downstream call that names none: its method, its URI template
     * (or its path as given when there is no template) and its occurrence in this execution, e.g.
     * {@code POST /charges#2} for the second such call. Each call counts: ask once per call.
     * Fragile when an execution makes such calls in an order that differs from the last one's
     * (calls in a loop over a set that changed, calls raced in parallel): name the step then.
     *
     * @param method      the HTTP method
     * @param uriTemplate the URI template or path
     * @return the step name
     */
    public String defaultStep(String method, String uriTemplate) {
        String base = method + ' ' + uriTemplate;
        int n = occurrences.computeIfAbsent(base, b -> new AtomicInteger()).incrementAndGet();
        return base + '#' + n;
    }

    private static String checkStep(String step) {
        if (step == null || step.isBlank()) {
            throw new IllegalArgumentException("a step needs a name (1 to " + MAX_STEP_LENGTH
                + " characters, not blank), was " + (step == null ? "null" : "blank"));
        }
        if (step.length() > MAX_STEP_LENGTH) {
            throw new IllegalArgumentException("a step name has at most " + MAX_STEP_LENGTH
                + " characters, this one has " + step.length() + ": shorten it");
        }
        return step;
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
        return "OperationContext[" + operationId.substring(0, Math.min(12, operationId.length())) + "]";
    }
}
