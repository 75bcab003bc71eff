package dev.idempotency.server;

import java.lang.annotation.Documented;
import java.lang.annotation.ElementType;
import java.lang.annotation.Retention;
import java.lang.annotation.RetentionPolicy;
import java.lang.annotation.Target;

/**
 * Puts a controller method, or every method of a controller class, under the Idempotency-Key
 * contract (CONTRACT S1, S2). On a method, it covers that method's route whatever
 * {@code idempotency.methods} says, for POST, PATCH, PUT and DELETE; on a GET, HEAD, OPTIONS or
 * TRACE method the application does not start (those are safe by definition, a key there is a
 * mistake). On a class, it covers the class's routes whose HTTP method is in
 * {@code idempotency.methods} (POST and PATCH by default) and leaves the others alone.
 *
 * <p>Read from compile-time annotation metadata; a member on the method overrides the same
 * member on the class. Durations use Micronaut's format ({@code 30s}, {@code 24h},
 * {@code PT5M}); an empty string means "the configured default". Invalid values fail the
 * application at startup.
 */
@Documented
@Retention(RetentionPolicy.RUNTIME)
@Target({ElementType.METHOD, ElementType.TYPE})
public @interface Idempotent {

    /**
     * @return whether a request without the header is rejected with 400
     *     {@code idempotency-key-missing} ({@code true}, the default) or runs without
     *     idempotency ({@code false})
     */
    boolean required() default true;

    /** @return how long a completed result is replayed; default {@code idempotency.retention} */
    String retention() default "";

    /** @return how long an in-progress request holds the key before it can be taken over; default {@code idempotency.lease} */
    String lease() default "";

    /**
     * @return how long a duplicate waits for the original to finish and replays its result
     *     instead of answering 409; default {@code 0s}: answer 409 at once
     */
    String inFlightWait() default "";

    /**
     * @return whether requests run without idempotency when the store is unavailable
     *     ({@code true}: fail open, logged at ERROR for every such request) instead of the
     *     default 503 {@code idempotency-store-unavailable}
     */
    boolean failOpen() default false;

    /**
     * @return whether this route runs in transactional mode (CONTRACT S18): the idempotency
     *     record and the handler's own database writes commit or roll back in one transaction of
     *     the store. Needs a transactional store (PostgreSQL); otherwise the application fails at
     *     startup. {@code idempotency.transactional=true} turns it on for every route; this member
     *     can only add routes to it. Default {@code false}
     */
    boolean transactional() default false;

    /**
     * @return whether an execution whose key is released (a 5xx, a failed handler) keeps its
     *     durable steps (CONTRACT S23), so that the retry resumes after the last recorded step.
     *     {@code false}: a release discards them, and the retry runs every step again (as
     *     {@link IdempotentOperation#abandon()} does for one execution). Default {@code true}
     */
    boolean keepSteps() default true;

    /** @return JSON Pointers (RFC 6901) of body members left out of the fingerprint, added to the configured ones */
    String[] ignoreJsonPointers() default {};

    /** @return request headers included in the fingerprint, added to the configured ones */
    String[] fingerprintHeaders() default {};

    /**
     * @return another request header that carries this route's key, taken as its raw value (no
     *     sf-string parsing), under the same limits (1-255 printable ASCII characters): e.g.
     *     {@code webhook-id} (Standard Webhooks) or {@code X-GitHub-Delivery}. Default: the
     *     configured {@code Idempotency-Key} header. Not together with {@link #keyPointer()}
     */
    String keyHeader() default "";

    /**
     * @return an RFC 6901 JSON Pointer to a string member of the JSON body that carries this
     *     route's key, e.g. {@code /idempotency_key}; a body without it (or with a non-string
     *     there) is answered 400 like a missing key. The member stays in the fingerprint. Default:
     *     the key comes from a header. Not together with {@link #keyHeader()}
     */
    String keyPointer() default "";

    /**
     * @return a stable name for this operation, e.g. {@code payments.create}: it replaces the
     *     HTTP method and route template in the key's scope (CONTRACT S6), so renaming the route
     *     or moving the controller keeps the keys callers are still retrying. Two routes with one
     *     name share their keys. Default: the method and route template
     */
    String operation() default "";
}
