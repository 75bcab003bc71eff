package dev.idempotency.server.internal.fingerprint;

import io.micronaut.core.annotation.Internal;

/**
 * An {@code Idempotency-Key} value that breaks the rules of {@link KeyHeader}. The message
 * says what is wrong and never contains the value itself.
 */
@Internal
public final class MalformedKeyException extends IllegalArgumentException {

    public MalformedKeyException(String message) {
        super(message);
    }
}
