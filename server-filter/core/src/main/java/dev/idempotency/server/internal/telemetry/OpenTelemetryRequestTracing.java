package dev.idempotency.server.internal.telemetry;

import dev.idempotency.context.TraceNames;
import dev.idempotency.server.IdempotencyOutcome;
import io.micronaut.context.annotation.Requires;
import io.micronaut.core.annotation.Nullable;
import io.micronaut.core.propagation.PropagatedContext;
import io.micronaut.tracing.opentelemetry.OpenTelemetryPropagationContext;
import io.opentelemetry.api.OpenTelemetry;
import io.opentelemetry.api.common.AttributeKey;
import io.opentelemetry.api.common.Attributes;
import io.opentelemetry.api.trace.Span;
import io.opentelemetry.api.trace.SpanContext;
import io.opentelemetry.api.trace.SpanKind;
import io.opentelemetry.api.trace.StatusCode;
import io.opentelemetry.api.trace.TraceFlags;
import io.opentelemetry.api.trace.TraceState;
import io.opentelemetry.api.trace.Tracer;
import io.opentelemetry.context.Context;

/**
 * The request's span, as Micronaut's OpenTelemetry server filter put it in the request's
 * propagated context, gets the O4 attributes; a replay's span links to the span that executed
 * the operation. A request without a recording span (tracing off for its path, not sampled) costs
 * a lookup and nothing else. Made with the application context, not on the first request: building
 * the OpenTelemetry SDK reads files, which must not happen on an event loop.
 */
@io.micronaut.context.annotation.Context
@Requires(classes = {Span.class, OpenTelemetryPropagationContext.class})
@Requires(beans = OpenTelemetry.class)
final class OpenTelemetryRequestTracing implements RequestTracing {

    static final AttributeKey<String> OUTCOME = AttributeKey.stringKey(TraceNames.OUTCOME);
    static final AttributeKey<String> KEY_HASH = AttributeKey.stringKey(TraceNames.KEY_HASH);
    static final AttributeKey<String> ROUTE = AttributeKey.stringKey(TraceNames.ROUTE);
    static final AttributeKey<String> STORE = AttributeKey.stringKey(TraceNames.STORE);
    static final AttributeKey<String> ORIGINAL_TRACE_ID = AttributeKey.stringKey(TraceNames.ORIGINAL_TRACE_ID);
    static final AttributeKey<String> STEP_NAME = AttributeKey.stringKey(TraceNames.STEP_NAME);
    static final AttributeKey<Boolean> STEP_RESUMED = AttributeKey.booleanKey(TraceNames.STEP_RESUMED);
    /** On the link: why the spans are linked. */
    static final AttributeKey<String> LINK_REASON = AttributeKey.stringKey(TraceNames.LINK);

    private final Tracer tracer;

    OpenTelemetryRequestTracing(OpenTelemetry openTelemetry) {
        this.tracer = openTelemetry.getTracer("dev.idempotency.server");
    }

    @Override
    public void outcome(PropagatedContext context, IdempotencyOutcome outcome, @Nullable String keyHash, String route,
                        String store) {
        Span span = span(context);
        if (!span.isRecording()) {
            return;
        }
        span.setAttribute(OUTCOME, outcome.tag());
        if (keyHash != null) {
            span.setAttribute(KEY_HASH, keyHash);
        }
        span.setAttribute(ROUTE, route);
        span.setAttribute(STORE, store);
    }

    @Override
    public void linkTo(PropagatedContext context, @Nullable String traceparent, String reason) {
        Span span = span(context);
        if (traceparent == null || !span.isRecording()) {
            return;
        }
        // validated when the record was written and read: 00-<trace id>-<span id>-<flags>
        String traceId = traceparent.substring(3, 35);
        SpanContext original = SpanContext.createFromRemoteParent(traceId, traceparent.substring(36, 52),
            TraceFlags.fromHex(traceparent, 53), TraceState.getDefault());
        span.addLink(original, Attributes.of(LINK_REASON, reason));
        span.setAttribute(ORIGINAL_TRACE_ID, traceId);
    }

    @Override
    public StoreSpan storeCall(PropagatedContext context, String operation) {
        Context parent = otel(context);
        if (!Span.fromContext(parent).isRecording()) {
            return StoreSpan.NONE;
        }
        Span span = tracer.spanBuilder(TraceNames.STORE_CALL_PREFIX + operation).setParent(parent).setSpanKind(SpanKind.CLIENT)
            .startSpan();
        return failure -> {
            if (failure != null) {
                span.recordException(failure);
                span.setStatus(StatusCode.ERROR);
            }
            span.end();
        };
    }

    @Override
    public StepSpan step(PropagatedContext context, String name) {
        Context parent = otel(context);
        if (!Span.fromContext(parent).isRecording()) {
            return StepSpan.NONE;
        }
        Span span = tracer.spanBuilder(TraceNames.STEP_SPAN).setParent(parent).setAttribute(STEP_NAME, name).startSpan();
        return (resumed, failure) -> {
            span.setAttribute(STEP_RESUMED, resumed);
            if (failure != null) {
                span.recordException(failure);
                span.setStatus(StatusCode.ERROR);
            }
            span.end();
        };
    }

    @Override
    public @Nullable String traceparent(PropagatedContext context) {
        SpanContext s = span(context).getSpanContext();
        if (!s.isValid()) {
            return null;
        }
        return "00-" + s.getTraceId() + '-' + s.getSpanId() + '-' + s.getTraceFlags().asHex();
    }

    private static Span span(PropagatedContext context) {
        return Span.fromContext(otel(context));
    }

    private static Context otel(PropagatedContext context) {
        return context.find(OpenTelemetryPropagationContext.class)
            .map(OpenTelemetryPropagationContext::context)
            .orElseGet(Context::current);
    }
}
