package dev.idempotency.client;

import dev.idempotency.client.internal.DefaultIdempotentClient;
import io.github.resilience4j.retry.Retry;
import io.micronaut.core.type.Argument;
import io.micronaut.http.client.HttpClient;

import java.util.concurrent.CompletableFuture;

/**
 * Sends one logical operation as many times as it takes, always with the same Idempotency-Key
 * (CONTRACT C1-C10): the key is made once, before the first attempt (or is the caller's own),
 * failures worth retrying are retried with capped exponential backoff and full jitter, honouring
 * {@code Retry-After}, within an overall deadline and a per-host retry budget.
 *
 * <pre>{@code
 * IdempotentClient payments = IdempotentClient.create(httpClient, IdempotentClientConfig.ofDefaults());
 * IdempotentResult<Payment> r = payments.execute(
 *     IdempotentRequest.post("/payments", new NewPayment(1000, "EUR")), Payment.class);
 * r.body(); r.replayed(); r.attempts(); r.key();
 * }</pre>
 *
 * <p>A final error answer, or giving up, throws an {@link IdempotentRequestException} subclass
 * that carries the key, the attempts and the problem body. Thread-safe; share one instance per
 * target so the retry budget is shared.
 */
public interface IdempotentClient {

    /**
     * @param httpClient the Micronaut HTTP client to send through (not closed by this client)
     * @param config     the settings
     * @return a client
     */
    static IdempotentClient create(HttpClient httpClient, IdempotentClientConfig config) {
        return new DefaultIdempotentClient(httpClient, config);
    }

    /**
     * @param httpClient the Micronaut HTTP client to send through
     * @return a client with the default settings
     */
    static IdempotentClient create(HttpClient httpClient) {
        return create(httpClient, IdempotentClientConfig.ofDefaults());
    }

    /**
     * Runs the operation, blocking the calling thread until it ends. Do not call it on an event
     * loop thread.
     *
     * @param request   the request
     * @param bodyType  the type to decode the final body to ({@code byte[]}, {@code String} or
     *                  anything the JSON mapper reads)
     * @param <T>       the body type
     * @return the result
     * @throws IdempotentRequestException     when the operation fails (see the subclasses)
     * @throws InvalidIdempotencyKeyException when the caller's key is invalid (nothing was sent)
     */
    <T> IdempotentResult<T> execute(IdempotentRequest request, Argument<T> bodyType);

    /**
     * @see #execute(IdempotentRequest, Argument)
     */
    default <T> IdempotentResult<T> execute(IdempotentRequest request, Class<T> bodyType) {
        return execute(request, Argument.of(bodyType));
    }

    /**
     * @see #execute(IdempotentRequest, Argument)
     */
    default IdempotentResult<byte[]> execute(IdempotentRequest request) {
        return execute(request, byte[].class);
    }

    /**
     * Runs the operation without blocking. The future fails with the same exceptions
     * {@link #execute(IdempotentRequest, Argument)} throws; its dependent stages may run on the
     * HTTP client's event loop, so they must not block.
     *
     * @param request   the request
     * @param bodyType  the type to decode the final body to
     * @param <T>       the body type
     * @return the result, eventually
     */
    <T> CompletableFuture<IdempotentResult<T>> executeAsync(IdempotentRequest request, Argument<T> bodyType);

    /**
     * @see #executeAsync(IdempotentRequest, Argument)
     */
    default <T> CompletableFuture<IdempotentResult<T>> executeAsync(IdempotentRequest request, Class<T> bodyType) {
        return executeAsync(request, Argument.of(bodyType));
    }

    /** @return the settings */
    IdempotentClientConfig config();

    /**
     * @return the resilience4j {@link Retry} that decides and times the retries; subscribe to
     *     {@code retry().getEventPublisher()} for its events (retry, success, error, ignored error)
     */
    Retry retry();
}
