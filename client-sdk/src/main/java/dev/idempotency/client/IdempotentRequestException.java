package dev.idempotency.client;

import java.util.Optional;
import java.util.OptionalInt;

/**
 * The common base of every failure of an idempotent operation (CONTRACT C9). Each carries the
 * key the attempts used (so the caller can retry the same operation later with
 * {@link IdempotentRequest#key(String)}), the number of attempts made, and the last response
 * with its problem body when there was one.
 *
 * <p>Thrown as is for a failure that is not retryable and has no better type (e.g. an unknown
 * host); the subclasses name the rest:
 * <ul>
 *   <li>{@link NonRetryableStatusException}: a 4xx (or other status) that is never retried,
 *       with {@link IdempotencyKeyReusedException} for the 422 {@code idempotency-key-reused};</li>
 *   <li>{@link RetriesExhaustedException}: every attempt failed with a retryable status or I/O
 *       error, with {@link RequestInProgressException} for a 409 on the last attempt;</li>
 *   <li>{@link RetryBudgetExhaustedException}: the target's retry budget was empty;</li>
 *   <li>{@link DeadlineExceededException}: the overall deadline left no room for another attempt.</li>
 * </ul>
 */
public class IdempotentRequestException extends RuntimeException {

    private final String key;
    private final int attempts;
    private final transient IdempotentResult<byte[]> response;
    private final transient ProblemDetails problem;

    /**
     * @param message  what happened
     * @param key      the key every attempt carried
     * @param attempts how many requests were sent
     * @param response the last response, or {@code null} when the last attempt got none
     * @param problem  the last response's problem body, or {@code null}
     * @param cause    the last I/O failure, or {@code null}
     */
    public IdempotentRequestException(String message, String key, int attempts,
                                      IdempotentResult<byte[]> response, ProblemDetails problem,
                                      Throwable cause) {
        super(message + " [Idempotency-Key " + key + ", " + attempts + (attempts == 1 ? " attempt" : " attempts")
            + (response != null ? ", last status " + response.status() : "")
            + (problem != null && problem.code() != null ? ", problem " + problem.code() : "") + "]", cause);
        this.key = key;
        this.attempts = attempts;
        this.response = response;
        this.problem = problem;
    }

    /** @return the Idempotency-Key every attempt carried; retry the operation later with it */
    public String key() {
        return key;
    }

    /** @return how many requests were sent (0 when none could be) */
    public int attempts() {
        return attempts;
    }

    /** @return the last response (status, headers, body bytes), if the last attempt got one */
    public Optional<IdempotentResult<byte[]>> response() {
        return Optional.ofNullable(response);
    }

    /** @return the last response's status, if there was a response */
    public OptionalInt status() {
        return response == null ? OptionalInt.empty() : OptionalInt.of(response.status());
    }

    /** @return the last response's {@code application/problem+json} body, if it had one */
    public Optional<ProblemDetails> problem() {
        return Optional.ofNullable(problem);
    }
}
