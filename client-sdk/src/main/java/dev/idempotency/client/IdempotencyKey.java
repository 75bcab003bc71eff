package dev.idempotency.client;

import io.micronaut.core.bind.annotation.Bindable;

import java.lang.annotation.Documented;
import java.lang.annotation.ElementType;
import java.lang.annotation.Retention;
import java.lang.annotation.RetentionPolicy;
import java.lang.annotation.Target;

/**
 * Marks the {@code String} parameter of an {@link IdempotentCall} method that carries the
 * caller's own Idempotency-Key (CONTRACT C1), e.g. one stored with the order before the call so
 * that a restarted process retries with the same key.
 *
 * <p>A non-null value is validated (1 to 255 printable ASCII characters, and sendable bare when
 * the key format is {@link KeyFormat#BARE}) before anything is sent, and then used unescaped as
 * the key of every attempt of that invocation. {@code null} means "make one" (a UUIDv4); declare
 * the parameter {@code @Nullable} for that. The parameter is not bound into the request in any
 * other way: the key reaches the server only as the Idempotency-Key header, written by the SDK.
 * At most one parameter of a method may carry it.
 */
@Documented
@Retention(RetentionPolicy.RUNTIME)
@Target({ElementType.PARAMETER})
@Bindable
public @interface IdempotencyKey {
}
