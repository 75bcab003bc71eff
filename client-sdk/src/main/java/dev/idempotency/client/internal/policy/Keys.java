package dev.idempotency.client.internal.policy;

import dev.idempotency.client.IdempotentClientConfig;
import dev.idempotency.client.InvalidIdempotencyKeyException;
import dev.idempotency.client.KeyFormat;
import dev.idempotency.context.OperationContext;
import io.micronaut.core.annotation.Internal;
import io.micronaut.core.annotation.Nullable;

import java.util.Objects;
import java.util.Optional;

/** The choice, validation and header encoding of Idempotency-Keys (CONTRACT C1, C2, C11, S4, S5). */
@Internal
public final class Keys {

    public static final int MAX_LENGTH = 255;
    public static final int MAX_STEP_LENGTH = 200;

    private Keys() {
    }

    /**
     * The key of one logical operation (C1, C11), made once before its first attempt: the caller's
     * own; else, inside an operation under the server filter (and unless the configuration turns
     * derivation off), the key derived from that operation and this call's step; else a generated
     * one.
     *
     * @param callerKey   the caller's key, or {@code null}
     * @param step        the call's explicit step name, or {@code null} for the default one
     * @param method      the HTTP method, for the default step name
     * @param uriTemplate the URI template (or the path as given), for the default step name
     * @return the validated key
     * @throws InvalidIdempotencyKeyException when the caller's key is invalid or has the form of a
     *     derived one
     */
    public static Chosen choose(@Nullable String callerKey, @Nullable String step, String method, String uriTemplate,
                                IdempotentClientConfig config) {
        if (callerKey != null) {
            if (OperationContext.isDerived(callerKey)) {
                throw new InvalidIdempotencyKeyException("the Idempotency-Key starts with '"
                    + OperationContext.DERIVED_KEY_PREFIX + "', which is reserved for keys the SDK derives inside an"
                    + " operation (CONTRACT C11); leave the key out there, or give one of another form");
            }
            return new Chosen(validate(callerKey, config.keyFormat()), null, null);
        }
        if (config.deriveKeys()) {
            Optional<OperationContext> operation = OperationContext.current();
            if (operation.isPresent()) {
                OperationContext in = operation.get();
                String derivedFrom = step != null ? step : in.defaultStep(method, uriTemplate);
                return new Chosen(in.derivedKey(derivedFrom), derivedFrom, in.operationId());
            }
        }
        return new Chosen(validate(config.keyGenerator().get(), config.keyFormat()), null, null);
    }

    /**
     * The key of one logical operation and, when it was derived (C11), where from.
     *
     * @param key         the key
     * @param step        the step it was derived from, or {@code null} when it was not derived
     * @param operationId the id of the operation it was derived from (the server's record id), or {@code null}
     */
    public record Chosen(String key, @Nullable String step, @Nullable String operationId) {
    }

    /**
     * @param step an explicit step name
     * @return it, when it is 1 to 200 characters and not blank
     * @throws IllegalArgumentException saying what is wrong
     */
    public static String validateStep(String step) {
        Objects.requireNonNull(step, "step");
        if (step.isBlank()) {
            throw new IllegalArgumentException("a step name must not be blank: name the downstream step, e.g."
                + " \"charge-card\", or leave it out for the default (method, URI template and occurrence)");
        }
        if (step.length() > MAX_STEP_LENGTH) {
            throw new IllegalArgumentException("a step name has at most " + MAX_STEP_LENGTH + " characters, this one has "
                + step.length());
        }
        return step;
    }

    /**
     * @return the key, when the server would accept it and it can be written in the format
     * @throws InvalidIdempotencyKeyException naming what is wrong, never the key itself
     */
    public static String validate(String key, KeyFormat format) {
        Objects.requireNonNull(key, "key");
        if (key.isEmpty()) {
            throw new InvalidIdempotencyKeyException("the Idempotency-Key is empty; it must have 1 to 255 characters");
        }
        if (key.length() > MAX_LENGTH) {
            throw new InvalidIdempotencyKeyException("the Idempotency-Key has " + key.length()
                + " characters; at most 255 are allowed");
        }
        for (int i = 0; i < key.length(); i++) {
            char c = key.charAt(i);
            if (c < 0x20 || c > 0x7E) {
                throw new InvalidIdempotencyKeyException(String.format(
                    "the Idempotency-Key has a character that is not printable ASCII (U+%04X at index %d); only 0x20-0x7E are allowed",
                    (int) c, i));
            }
            if (format == KeyFormat.BARE && (c == ' ' || c == '"' || c == '\\' || c == ',')) {
                throw new InvalidIdempotencyKeyException(String.format(
                    "the Idempotency-Key cannot be sent as a bare token: it holds '%c' at index %d "
                        + "(a bare key may not contain spaces, quotes, backslashes or commas); use KeyFormat.QUOTED",
                    c, i));
            }
        }
        return key;
    }

    /** @return the header field value for a validated key */
    public static String headerValue(String key, KeyFormat format) {
        if (format == KeyFormat.BARE) {
            return key;
        }
        StringBuilder sb = new StringBuilder(key.length() + 2).append('"');
        for (int i = 0; i < key.length(); i++) {
            char c = key.charAt(i);
            if (c == '"' || c == '\\') {
                sb.append('\\');
            }
            sb.append(c);
        }
        return sb.append('"').toString();
    }
}
