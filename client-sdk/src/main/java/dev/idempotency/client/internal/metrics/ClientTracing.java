package dev.idempotency.client.internal.metrics;

import io.micronaut.core.annotation.Internal;
import io.micronaut.core.annotation.Nullable;
import io.micronaut.core.reflect.ClassUtils;

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
    ClientTracing NONE = (operation, key, step, parentOperation) -> OperationSpan.NONE;

    /**
     * @param operation       the operation as the retry log line names it, e.g. {@code POST /payments}
     * @param key             the operation's Idempotency-Key (only its hash is recorded)
     * @param step            the step the key was derived from inside a server operation (C11), or {@code null}
     * @param parentOperation the id of that server operation (its record id), or {@code null}
     * @return the operation's span, started now
     */
    OperationSpan start(String operation, String key, @Nullable String step, @Nullable String parentOperation);

    /**
     * The tracing of clients made with {@code IdempotentClient.create(...)}, outside the
     * application context: through {@code GlobalOpenTelemetry} when OpenTelemetry is on the class
     * path (what the application or the OpenTelemetry agent registered, looked up when each
     * operation starts), else none.
     *
     * @return the tracing for a client made by hand
     */
    static ClientTracing global() {
        // the class is loaded only when OpenTelemetry is there to load it with
        return ClassUtils.isPresent("io.opentelemetry.api.GlobalOpenTelemetry", ClientTracing.class.getClassLoader())
            ? OpenTelemetryClientTracing.global() : NONE;
    }

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
