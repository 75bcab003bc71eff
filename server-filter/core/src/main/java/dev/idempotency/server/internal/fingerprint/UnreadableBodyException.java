package dev.idempotency.server.internal.fingerprint;

import io.micronaut.core.annotation.Internal;

/**
 * A body whose content type promises a structure it does not have, where the fingerprint needs
 * that structure (a multipart body without its boundary, CONTRACT S7): the request is answered
 * 400 {@code idempotency-body-unreadable} with this message, before the store is touched.
 */
@Internal
public final class UnreadableBodyException extends RuntimeException {

    UnreadableBodyException(String message) {
        super(message, null, false, false);
    }
}
