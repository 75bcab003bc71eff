package dev.idempotency.client;

import dev.idempotency.client.internal.DeclarativeCall;

import java.util.Optional;

/**
 * The outcome of declarative {@link IdempotentCall} invocations (CONTRACT C9).
 */
public final class IdempotentCalls {

    private IdempotentCalls() {
    }

    /**
     * The outcome of the last {@link IdempotentCall} invocation that SUCCEEDED on the calling
     * thread: its key, attempts, whether it was a replay, the final status and headers, and as
     * {@link IdempotentResult#body()} what the method returned (for {@code HttpResponse<T>}, its
     * body). {@link IdempotentResult#bodyBytes()} is empty: Micronaut decoded the body. Each
     * annotated invocation clears it when it starts, so after a failed invocation it is empty
     * (the exception carries the key, the attempts and the last response instead). Read it on
     * the thread that made the call, right after the call.
     *
     * @return the last successful invocation's result on this thread, if the last invocation succeeded
     */
    public static Optional<IdempotentResult<?>> lastResult() {
        return Optional.ofNullable(DeclarativeCall.LAST.get());
    }
}
