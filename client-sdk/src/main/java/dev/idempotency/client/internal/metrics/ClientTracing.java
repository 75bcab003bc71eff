package dev.idempotency.client.internal.metrics;

import io.micronaut.core.annotation.Internal;
import io.micronaut.core.annotation.Nullable;

import java.time.Duration;

/**
 * What a client writes into the application's trace (CONTRACT O4): one span per logical
 * operation, a child span per attempt, an event per retry. A bean only when an OpenTelemetry bean
 * exists ({@link OpenTelemetryClientTracing}); the clients the application context makes use it,
 * and without it {@link #NONE} costs nothing.
 */
@Internal
public interface ClientTracing {

    /** No tracing. */
    ClientTracing NONE = (operation, key) -> OperationSpan.NONE;

    /**
     * @param operation the operation as the retry log line names it, e.g. {@code POST /payments}
     * @param key       the operation's Idempotency-Key (only its hash is recorded)
     * @return the operation's span, started now
     */
    OperationSpan start(String operation, String key);

    /** One logical operation, all its attempts included. */
    interface OperationSpan {
        /** A span that records nothing. */
        OperationSpan NONE = new OperationSpan() {
        };

        /** @return the span of attempt {@code number}, started now and current until {@link AttemptSpan#close()} */
        default AttemptSpan attempt(int number) {
            return AttemptSpan.NONE;
        }

        /** A retry is scheduled after attempt {@code number} failed for {@code reason}: an event with the wait (C10). */
        default void retry(int number, Duration wait, String reason) {
        }

        /**
         * Ends the operation's span.
         *
         * @param outcome  the {@code outcome} tag of the client's metrics: success, replayed, retries-exhausted, ...
         * @param replayed whether the answer was the server's replay
         * @param attempts how many attempts were sent
         * @param failure  why it failed, or {@code null}
         */
        default void end(String outcome, boolean replayed, int attempts, @Nullable Throwable failure) {
        }
    }

    /** One attempt: current on the sending thread between its start and {@link #close()}, so the HTTP client's span is its child. */
    interface AttemptSpan extends AutoCloseable {
        /** A span that records nothing. */
        AttemptSpan NONE = new AttemptSpan() {
        };

        /** No longer current on this thread (the attempt's span stays open until {@link #end}). */
        @Override
        default void close() {
        }

        /** Ends the attempt with the status it got ({@code 0}: none) or its failure. */
        default void end(int status, @Nullable Throwable failure) {
        }
    }
}
