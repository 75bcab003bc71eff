package dev.idempotency.client;

/**
 * A retry was due but the target host's retry budget was empty (CONTRACT C7): recent requests
 * to that host failed so often that retrying would multiply the load on a server that is down.
 * The call fails fast after its first failed attempt until successes refill the budget.
 */
public class RetryBudgetExhaustedException extends IdempotentRequestException {

    /**
     * @param message  what happened
     * @param key      the key every attempt carried
     * @param attempts how many requests were sent
     * @param response the last response, or {@code null}
     * @param problem  its problem body, or {@code null}
     * @param cause    the last I/O failure, or {@code null}
     */
    public RetryBudgetExhaustedException(String message, String key, int attempts, IdempotentResult<byte[]> response,
        ProblemDetails problem, Throwable cause) {
        super(message, key, attempts, response, problem, cause);
    }
}
