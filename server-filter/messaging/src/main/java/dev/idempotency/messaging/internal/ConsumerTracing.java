package dev.idempotency.messaging.internal;

import dev.idempotency.messaging.Disposition;
import dev.idempotency.messaging.ReceivedMessage;
import io.micronaut.core.annotation.Internal;

/**
 * What a consumer writes into the trace (CONTRACT O4): one span per delivery, continuing the
 * publisher's trace (M11), that says how the delivery ended. A bean only when OpenTelemetry is
 * on the class path and the application has an {@code OpenTelemetry} bean
 * ({@link OpenTelemetryConsumerTracing}); without, consumers trace nothing and load no
 * OpenTelemetry class.
 */
@Internal
public interface ConsumerTracing {

    /**
     * Starts the span of one delivery, a child of the publishing request's span when the message
     * carries its {@code traceparent}.
     *
     * @param consumer the consumer's name
     * @param keyHash  the first 12 hex digits of the message's record key, as the log lines print it
     * @return the span, to make current while the handler is called and to end with the disposition
     */
    DeliverySpan start(String consumer, ReceivedMessage message, String keyHash);

    /** One delivery's span. */
    interface DeliverySpan {

        /** A span that records nothing. */
        DeliverySpan NONE = new DeliverySpan() {
            @Override
            public Current current() {
                return () -> { };
            }

            @Override
            public void handlerFailed(Throwable failure) {
            }

            @Override
            public void end(Disposition disposition) {
            }
        };

        /**
         * Makes the span current on this thread, so the spans the handler starts are its children.
         *
         * @return what to close when the handler has returned
         */
        Current current();

        /** Records what the handler threw on the span, which is then an error. */
        void handlerFailed(Throwable failure);

        /**
         * Ends the span with the delivery's outcome ({@code idempotency.outcome}: {@code processed},
         * {@code duplicate}, {@code requeued}, {@code retried}, {@code dead-lettered}) and, unless
         * processed or a duplicate, its reason ({@code idempotency.reason}).
         */
        void end(Disposition disposition);
    }

    /** The span being current on a thread; closing it does not throw. */
    interface Current extends AutoCloseable {
        @Override
        void close();
    }
}
