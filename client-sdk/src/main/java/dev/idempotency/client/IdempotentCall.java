package dev.idempotency.client;

import io.micronaut.aop.Around;

import java.lang.annotation.Documented;
import java.lang.annotation.ElementType;
import java.lang.annotation.Retention;
import java.lang.annotation.RetentionPolicy;
import java.lang.annotation.Target;

/**
 * Makes each invocation of a method of a declarative Micronaut {@code @Client} interface ONE
 * idempotent operation (CONTRACT C1, C8), retried as a whole with one Idempotency-Key.
 * On the interface, it applies to every method of the interface.
 *
 * <pre>{@code
 * @Client("payments")
 * interface PaymentsClient {
 *     @Post("/payments")
 *     @IdempotentCall
 *     Payment create(@Body NewPayment payment);
 *
 *     @Post("/payments")
 *     @IdempotentCall("payments")                        // settings of idempotency.client.payments.*
 *     HttpResponse<Payment> create(@Body NewPayment payment, @IdempotencyKey String key);
 * }
 * }</pre>
 *
 * <p>What is guaranteed, for each invocation of an annotated method:
 * <ul>
 *   <li>The key is made ONCE, before the first attempt: a random UUIDv4 from the configured key
 *       generator, or the value of the parameter annotated {@link IdempotencyKey} when the caller
 *       passes one (validated like {@link IdempotentRequest#key(String)}: 1 to 255 printable
 *       ASCII characters; an invalid key throws {@link InvalidIdempotencyKeyException} and nothing
 *       is sent). Inside an operation under the server filter, a key derived from that operation
 *       and the call's {@link #step()} instead of a random one (C11), so a handler that runs
 *       again sends the same key downstream. Every attempt of the invocation carries that same key, as an sf-string by
 *       default (C2), set by a client filter on each attempt's request; a second invocation gets a
 *       new key (unless the caller passes the same one).</li>
 *   <li>The WHOLE invocation is retried: each attempt runs the rest of the method's interceptor
 *       chain again, so Micronaut binds and sends a fresh request (the arguments must therefore
 *       give the same request every time; a body that can be read only once must not be used).
 *       Attempts run on the calling thread, one after the other.</li>
 *   <li>The policy is the programmatic client's ({@link IdempotentClient}), with the settings
 *       named by {@link #value()}: what is retried (C4: I/O failures, timeouts, 408, 425, 429,
 *       5xx and the filter's 409 in-progress; never 400, 401, 403, 413, 422 or another 4xx),
 *       capped exponential backoff with full jitter (C3), {@code Retry-After} (C5), the overall
 *       deadline (C6), the per-target retry budget (C7, the target being the {@code @Client} id or
 *       URL), resilience4j events, Micrometer meters and one log line per retry (C10).</li>
 *   <li>A final error becomes the same typed exception as in the programmatic API (C9), each
 *       carrying the key, the number of attempts and the last response with its problem body:
 *       {@link NonRetryableStatusException}, {@link IdempotencyKeyReusedException},
 *       {@link RetriesExhaustedException}, {@link RequestInProgressException},
 *       {@link RetryBudgetExhaustedException}, {@link DeadlineExceededException}. Micronaut's
 *       {@code HttpClientResponseException} never escapes an annotated method. A 404 keeps
 *       Micronaut's declarative rule (the method returns {@code null}, an empty {@code Optional}
 *       or the 404 {@code HttpResponse}) and is not retried.</li>
 *   <li>The outcome (replayed, attempts, key, status, headers) of the calling thread's last
 *       successful annotated invocation is {@link IdempotentCalls#lastResult()}; a method that
 *       returns {@code HttpResponse<T>} also sees the server's {@code Idempotent-Replayed} header
 *       itself.</li>
 * </ul>
 *
 * <p>Supported return types: blocking ones (a body type, {@code HttpResponse<T>},
 * {@code Optional<T>} or {@code void}), which run every attempt on the calling thread, so do not
 * call them on an event loop; and asynchronous ones ({@code CompletableFuture<T>},
 * {@code CompletionStage<T>}, or a {@code Publisher<T>} such as Reactor's {@code Mono}), which
 * return at once and run the same policy by callbacks, blocking no thread: the returned stage
 * completes with the final attempt's value, or fails with the exception the blocking form would
 * throw. {@link IdempotentCalls#lastResult()} is for the blocking forms only.
 *
 * <p>Do not combine it with Micronaut's {@code @Retryable} on the same method (that would retry
 * the retries), and do not mint keys in a client filter of your own: a filter runs once per
 * ATTEMPT, so a key made there is a new key on every retry and the server runs the operation
 * again (see the README).
 *
 * <p>The per-attempt timeout of a declarative call is the HTTP client's {@code read-timeout}
 * (configure it for the client's service), not {@link IdempotentClientConfig#attemptTimeout()};
 * the overall deadline is checked before each attempt and each wait.
 */
@Documented
@Retention(RetentionPolicy.RUNTIME)
@Target({ElementType.METHOD, ElementType.TYPE})
@Around
public @interface IdempotentCall {

    /**
     * @return the name of the settings to use: an {@code idempotency.client.<name>} entry, or an
     *     {@link IdempotentClient} bean {@code @Named("<name>")}. Empty (the default): the bean
     *     named {@code default} when there is one, otherwise the default settings.
     */
    String value() default "";

    /**
     * @return the name of this call's step within the operation it is made in (CONTRACT C11).
     *     Inside an operation under the server filter, an invocation without a key of the
     *     caller's sends a key derived from that operation and this step, the same on every
     *     execution of the operation. Empty (the default): the HTTP method, the URI template and
     *     the invocation's occurrence in the execution ({@code POST /charges/{id}#1}), which
     *     changes when the execution makes its calls in another order; name the step then. 1 to
     *     200 characters.
     */
    String step() default "";
}
