package dev.idempotency.server.internal.telemetry;

import dev.idempotency.context.TraceNames;
import dev.idempotency.server.IdempotencyOutcome;
import io.micronaut.core.annotation.Internal;
import io.micronaut.core.annotation.Nullable;
import io.micronaut.core.propagation.PropagatedContext;

/**
 * What the filter writes into the request's trace (CONTRACT O4). A bean only when OpenTelemetry
 * and Micronaut's tracing are on the class path ({@link OpenTelemetryRequestTracing}); without
 * them the filter has none and loads no tracing class.
 */
@Internal
public interface RequestTracing {

    /**
     * Sets the outcome attributes on the request's span.
     *
     * @param context the request's propagated context, which holds its span
     * @param keyHash the key's hash as the log line prints it, or {@code null} before there was a key
     */
    void outcome(PropagatedContext context, IdempotencyOutcome outcome, @Nullable String keyHash, String route,
                 String store);

    /**
     * Links the request's span to the run that does or did the work: the one that executed a
     * replayed response ({@link #REPLAY_OF}) or the one still running that a 409 waits for
     * ({@link #IN_PROGRESS}). Does nothing when {@code traceparent} is {@code null} (the record kept none).
     *
     * @param traceparent that run's trace context, as its record kept it
     * @param reason      the link's {@code idempotency.link} attribute
     */
    void linkTo(PropagatedContext context, @Nullable String traceparent, String reason);

    /** The reason of a replay's link: the linked span executed the operation. */
    String REPLAY_OF = TraceNames.LINK_REPLAY_OF;

    /** The reason of a 409's link: the linked span is running the operation. */
    String IN_PROGRESS = TraceNames.LINK_IN_PROGRESS;

    /**
     * Starts the span of a store call, a child of the request's span: {@code idempotency.acquire},
     * {@code idempotency.complete}, {@code idempotency.release}.
     *
     * @return the span to end when the call has completed; a no-op when the request's span is not recording
     */
    StoreSpan storeCall(PropagatedContext context, String operation);

    /** A store call's span. */
    interface StoreSpan {
        /** A span that records nothing. */
        StoreSpan NONE = failure -> { };

        /** Ends the span; {@code failure} marks it an error. */
        void end(@Nullable Throwable failure);
    }

    /**
     * Starts the span {@code idempotency.step} of a durable step, a child of the request's span,
     * with the step's name in {@code idempotency.step.name}.
     *
     * @return the span to end when the step's result is known; a no-op when the request's span is not recording
     */
    StepSpan step(PropagatedContext context, String name);

    /** A durable step's span. */
    interface StepSpan {
        /** A span that records nothing. */
        StepSpan NONE = (resumed, failure) -> { };

        /**
         * Ends the span with {@code idempotency.step.resumed}: whether the result came from an
         * earlier execution's record instead of running the work.
         */
        void end(boolean resumed, @Nullable Throwable failure);
    }

    /** @return the request's span as a W3C {@code traceparent}, or {@code null} when it has no valid span */
    @Nullable
    String traceparent(PropagatedContext context);
}
