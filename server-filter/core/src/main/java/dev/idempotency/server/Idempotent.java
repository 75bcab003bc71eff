package dev.idempotency.server;

import java.lang.annotation.Documented;
import java.lang.annotation.ElementType;
import java.lang.annotation.Retention;
import java.lang.annotation.RetentionPolicy;
import java.lang.annotation.Target;

/**
 * Puts a controller method, or every method of a controller class, under the Idempotency-Key
 * contract (CONTRACT S2). Only the configured methods are covered (POST and PATCH by default);
 * on any other method the annotation has no effect.
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
}
