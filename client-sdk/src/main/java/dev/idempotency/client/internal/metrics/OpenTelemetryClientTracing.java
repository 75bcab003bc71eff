package dev.idempotency.client.internal.metrics;

import dev.idempotency.context.TraceNames;
import io.micronaut.context.annotation.Requires;
import io.micronaut.core.annotation.Nullable;
import io.opentelemetry.api.GlobalOpenTelemetry;
import io.opentelemetry.api.OpenTelemetry;
import io.opentelemetry.api.common.AttributeKey;
import io.opentelemetry.api.common.Attributes;
import io.opentelemetry.api.trace.Span;
import io.opentelemetry.api.trace.SpanBuilder;
import io.opentelemetry.api.trace.StatusCode;
import io.opentelemetry.api.trace.Tracer;
import io.opentelemetry.context.Context;
import io.opentelemetry.context.Scope;
import jakarta.inject.Inject;
import jakarta.inject.Singleton;

import java.nio.charset.StandardCharsets;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.time.Duration;
import java.util.HexFormat;
import java.util.function.Supplier;

/**
 * Spans through the application's {@link OpenTelemetry}: {@code idempotency.client.operation}, a
 * child of whatever span is current when the operation starts, with a child
 * {@code idempotency.client.attempt} per attempt and an event {@code idempotency.retry} per retry.
 */
@Singleton
@Requires(classes = OpenTelemetry.class)
@Requires(beans = OpenTelemetry.class)
final class OpenTelemetryClientTracing implements ClientTracing {

    static final AttributeKey<String> KEY_HASH = AttributeKey.stringKey(TraceNames.KEY_HASH);
    static final AttributeKey<String> OPERATION = AttributeKey.stringKey(TraceNames.OPERATION);
    static final AttributeKey<String> OUTCOME = AttributeKey.stringKey(TraceNames.OUTCOME);
    static final AttributeKey<Long> ATTEMPTS = AttributeKey.longKey(TraceNames.ATTEMPTS);
    static final AttributeKey<Long> ATTEMPT = AttributeKey.longKey(TraceNames.ATTEMPT);
    static final AttributeKey<Boolean> REPLAYED = AttributeKey.booleanKey(TraceNames.REPLAYED);
    static final AttributeKey<Long> STATUS = AttributeKey.longKey("http.response.status_code");
    static final AttributeKey<Long> WAIT_MS = AttributeKey.longKey(TraceNames.RETRY_WAIT_MS);
    static final AttributeKey<String> REASON = AttributeKey.stringKey(TraceNames.RETRY_REASON);

    static final AttributeKey<String> STEP = AttributeKey.stringKey(TraceNames.STEP_NAME);
    static final AttributeKey<String> PARENT_KEY_HASH = AttributeKey.stringKey(TraceNames.PARENT_KEY_HASH);
    static final String SCOPE = "dev.idempotency.client";

    private final Supplier<Tracer> tracer;

    @Inject
    OpenTelemetryClientTracing(OpenTelemetry openTelemetry) {
        Tracer fixed = openTelemetry.getTracer(SCOPE);
        this.tracer = () -> fixed;
    }

    private OpenTelemetryClientTracing(Supplier<Tracer> tracer) {
        this.tracer = tracer;
    }

    /**
     * @return tracing through {@link GlobalOpenTelemetry}, looked up when each operation starts: a
     *     client made before the application registered its SDK still traces once it has
     */
    static ClientTracing global() {
        return new OpenTelemetryClientTracing(() -> GlobalOpenTelemetry.getTracer(SCOPE));
    }

    @Override
    public OperationSpan start(String operation, String key, @Nullable String step, @Nullable String parentOperation) {
        Tracer t = tracer.get();
        SpanBuilder builder = t.spanBuilder(TraceNames.CLIENT_OPERATION_SPAN).setAttribute(OPERATION, operation)
            .setAttribute(KEY_HASH, hash(key));
        if (step != null && parentOperation != null) {
            // a call inside a server operation (C11): its derived key's step, and the operation's key hash as the server logs it
            builder.setAttribute(STEP, step).setAttribute(PARENT_KEY_HASH,
                parentOperation.substring(0, Math.min(12, parentOperation.length())));
        }
        Span span = builder.startSpan();
        Context parent = Context.current().with(span);
        return new OperationSpan() {
            @Override
            public AttemptSpan attempt(int number) {
                Span attempt = t.spanBuilder(TraceNames.CLIENT_ATTEMPT_SPAN).setParent(parent)
                    .setAttribute(ATTEMPT, (long) number).startSpan();
                Scope scope = parent.with(attempt).makeCurrent();
                return new AttemptSpan() {
                    @Override
                    public void close() {
                        scope.close();
                    }

                    @Override
                    public void end(int status, @Nullable Throwable failure) {
                        if (status > 0) {
                            attempt.setAttribute(STATUS, (long) status);
                        }
                        if (failure != null) {
                            attempt.recordException(failure);
                            attempt.setStatus(StatusCode.ERROR);
                        }
                        attempt.end();
                    }
                };
            }

            @Override
            public void retry(int number, Duration wait, String reason) {
                span.addEvent(TraceNames.RETRY_EVENT, Attributes.of(ATTEMPT, (long) number, WAIT_MS, wait.toMillis(),
                    REASON, reason));
            }

            @Override
            public void end(String outcome, boolean replayed, int attempts, @Nullable Throwable failure) {
                span.setAttribute(OUTCOME, outcome);
                span.setAttribute(REPLAYED, replayed);
                span.setAttribute(ATTEMPTS, (long) attempts);
                if (failure != null) {
                    span.recordException(failure);
                    span.setStatus(StatusCode.ERROR);
                }
                span.end();
            }
        };
    }

    /** @return the first 12 hex digits of the key's SHA-256: enough to find it, never the key */
    static String hash(String key) {
        try {
            byte[] digest = MessageDigest.getInstance("SHA-256").digest(key.getBytes(StandardCharsets.UTF_8));
            return HexFormat.of().formatHex(digest, 0, 6);
        } catch (NoSuchAlgorithmException e) {
            throw new IllegalStateException("SHA-256 is missing from this JVM", e);
        }
    }
}
