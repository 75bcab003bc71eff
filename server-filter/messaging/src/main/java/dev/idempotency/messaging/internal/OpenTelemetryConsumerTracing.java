package dev.idempotency.messaging.internal;

import dev.idempotency.context.TraceNames;
import dev.idempotency.messaging.Disposition;
import dev.idempotency.messaging.ReceivedMessage;
import io.micronaut.context.annotation.Requires;
import io.micronaut.core.annotation.Nullable;
import io.opentelemetry.api.OpenTelemetry;
import io.opentelemetry.api.common.AttributeKey;
import io.opentelemetry.api.trace.Span;
import io.opentelemetry.api.trace.SpanKind;
import io.opentelemetry.api.trace.StatusCode;
import io.opentelemetry.api.trace.Tracer;
import io.opentelemetry.api.trace.propagation.W3CTraceContextPropagator;
import io.opentelemetry.context.Context;
import io.opentelemetry.context.Scope;
import io.opentelemetry.context.propagation.TextMapGetter;
import jakarta.inject.Singleton;

import java.util.List;

/**
 * Delivery spans through the application's {@link OpenTelemetry}: {@code idempotency.consumer.process},
 * of kind consumer, whose parent is the span of the request that published the message (its
 * {@code traceparent} and {@code tracestate} headers, CONTRACT M11), or the span current on the
 * broker client's thread when the message carries none.
 */
@Singleton
@Requires(classes = OpenTelemetry.class)
@Requires(beans = OpenTelemetry.class)
final class OpenTelemetryConsumerTracing implements ConsumerTracing {

    static final AttributeKey<String> CONSUMER = AttributeKey.stringKey(TraceNames.CONSUMER);
    static final AttributeKey<String> MESSAGE_ID = AttributeKey.stringKey("messaging.message.id");
    static final AttributeKey<String> KEY_HASH = AttributeKey.stringKey(TraceNames.KEY_HASH);
    static final AttributeKey<Long> ATTEMPT = AttributeKey.longKey(TraceNames.ATTEMPT);
    static final AttributeKey<String> OUTCOME = AttributeKey.stringKey(TraceNames.OUTCOME);
    static final AttributeKey<String> REASON = AttributeKey.stringKey(TraceNames.REASON);

    /** Reads the W3C headers of a received message. */
    private static final TextMapGetter<ReceivedMessage> HEADERS = new TextMapGetter<>() {
        @Override
        public Iterable<String> keys(ReceivedMessage message) {
            return List.of(TraceContext.TRACEPARENT, TraceContext.TRACESTATE);
        }

        @Override
        public @Nullable String get(@Nullable ReceivedMessage message, String key) {
            return message == null ? null : message.header(key).map(String::trim).orElse(null);
        }
    };

    private final Tracer tracer;

    OpenTelemetryConsumerTracing(OpenTelemetry openTelemetry) {
        this.tracer = openTelemetry.getTracer("dev.idempotency.messaging");
    }

    @Override
    public DeliverySpan start(String consumer, ReceivedMessage message, String keyHash) {
        Context parent = message.traceparent().isPresent()
            ? W3CTraceContextPropagator.getInstance().extract(Context.root(), message, HEADERS)
            : Context.current();
        Span span = tracer.spanBuilder(TraceNames.CONSUMER_SPAN).setParent(parent).setSpanKind(SpanKind.CONSUMER)
            .setAttribute(CONSUMER, consumer).setAttribute(MESSAGE_ID, message.messageId())
            .setAttribute(KEY_HASH, keyHash).setAttribute(ATTEMPT, (long) message.attempt() + 1).startSpan();
        return new DeliverySpan() {
            @Override
            public Current current() {
                Scope scope = parent.with(span).makeCurrent();
                return scope::close;
            }

            @Override
            public void handlerFailed(Throwable failure) {
                span.recordException(failure);
                span.setStatus(StatusCode.ERROR);
            }

            @Override
            public void end(Disposition disposition) {
                span.setAttribute(OUTCOME, disposition.outcome().tag);
                if (disposition instanceof Disposition.Retry retry) {
                    span.setAttribute(REASON, retry.reason());
                } else if (disposition instanceof Disposition.DeadLetter dead) {
                    span.setAttribute(REASON, dead.reason());
                    span.setStatus(StatusCode.ERROR, "dead-lettered");
                }
                span.end();
            }
        };
    }
}
