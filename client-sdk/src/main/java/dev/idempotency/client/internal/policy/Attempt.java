package dev.idempotency.client.internal.policy;

import dev.idempotency.client.IdempotentResult;
import dev.idempotency.client.ProblemDetails;
import io.micronaut.core.annotation.Internal;
import io.micronaut.core.annotation.Nullable;

import java.time.Duration;

/**
 * What one attempt produced, as the resilience4j engine sees it: a response (I/O failures go
 * to the engine as exceptions), whether it is worth retrying, and the server's Retry-After.
 */
@Internal
public record Attempt(int number, IdempotentResult<byte[]> response, @Nullable ProblemDetails problem,
               Classifier.Verdict verdict, @Nullable Duration retryAfter) {

    public boolean retryable() {
        return verdict == Classifier.Verdict.RETRY;
    }
}
