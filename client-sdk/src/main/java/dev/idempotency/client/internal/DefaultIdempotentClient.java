package dev.idempotency.client.internal;

import dev.idempotency.client.IdempotentCall;
import dev.idempotency.client.IdempotentClient;
import dev.idempotency.client.IdempotentClientConfig;
import dev.idempotency.client.IdempotentRequest;
import dev.idempotency.client.IdempotentResult;
import dev.idempotency.client.Sleeper;
import dev.idempotency.client.internal.metrics.ClientMetrics;
import dev.idempotency.client.internal.metrics.ClientTracing;
import dev.idempotency.client.internal.policy.Attempt;
import dev.idempotency.client.internal.policy.Backoff;
import dev.idempotency.client.internal.policy.Classifier;
import dev.idempotency.client.internal.policy.Keys;
import dev.idempotency.client.internal.policy.RetryBudget;
import io.github.resilience4j.retry.Retry;
import io.github.resilience4j.retry.RetryConfig;
import io.github.resilience4j.retry.RetryRegistry;
import io.micronaut.core.annotation.Internal;
import io.micronaut.core.type.Argument;
import io.micronaut.http.client.HttpClient;
import io.micronaut.json.JsonMapper;
import org.reactivestreams.Publisher;

import java.net.URI;
import java.util.Objects;
import java.util.concurrent.CancellationException;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.Future;

/**
 * The client: what every operation's attempts share (the settings, the resilience4j {@link Retry},
 * the retry budgets, the metrics, the JSON mapper), and the entry points that start them. The
 * attempts themselves run in an {@link AttemptLoop}: {@link OperationAttempts} for the
 * programmatic API, {@link InvocationAttempts} for declarative {@link IdempotentCall} methods.
 *
 * <p>The resilience4j {@link Retry} is the engine: its {@link Retry.AsyncContext} decides (result
 * and exception predicates, max attempts), computes the wait through {@link Backoff}, counts and
 * publishes the events. The async context is used for the blocking form too, because it returns
 * the wait instead of sleeping through resilience4j's global {@code Thread::sleep}: the wait goes
 * through the configured {@link Sleeper}, and checks the engine cannot make (deadline,
 * Retry-After past the deadline, retry budget) come first.
 */
@Internal
public final class DefaultIdempotentClient implements IdempotentClient {

    private final HttpClient http;
    private final IdempotentClientConfig config;
    private final Retry retry;
    public final RetryBudget.Registry budgets;
    public final ClientMetrics metrics;
    /** The operations' spans (CONTRACT O4); {@link ClientTracing#NONE} without OpenTelemetry. */
    public final ClientTracing tracing;
    private volatile JsonMapper jsonMapper;

    /**
     * @param http   the HTTP client of the programmatic API; {@code null} for an engine that only
     *               drives declarative calls ({@link IdempotentCall})
     * @param config the settings
     */
    public DefaultIdempotentClient(HttpClient http, IdempotentClientConfig config) {
        this(http, config, ClientTracing.global());
    }

    /**
     * @param http    as above
     * @param config  the settings
     * @param tracing the operations' spans
     */
    public DefaultIdempotentClient(HttpClient http, IdempotentClientConfig config, ClientTracing tracing) {
        this.tracing = Objects.requireNonNull(tracing, "tracing");
        this.http = http;
        this.config = Objects.requireNonNull(config, "config");
        RetryConfig retryConfig = RetryConfig.<Attempt>custom()
            .maxAttempts(config.maxAttempts())
            .retryOnResult(Attempt::retryable)
            .retryOnException(Classifier::isRetryableFailure)
            .intervalBiFunction(new Backoff(config))
            .failAfterMaxAttempts(false)
            .build();
        RetryRegistry registry = RetryRegistry.of(retryConfig);
        this.retry = registry.retry(config.name());
        this.budgets = config.budgetEnabled()
            ? new RetryBudget.Registry(config.budgetCapacity(), config.budgetRefillPerSuccess()) : null;
        this.metrics = ClientMetrics.create(config.meterRegistry(), config.name(), registry);
        this.jsonMapper = config.jsonMapper();
    }

    @Override
    public IdempotentClientConfig config() {
        return config;
    }

    @Override
    public Retry retry() {
        return retry;
    }

    @Override
    public <T> IdempotentResult<T> execute(IdempotentRequest operation, Argument<T> bodyType) {
        CompletableFuture<IdempotentResult<T>> future = executeAsync(operation, bodyType);
        try {
            return future.get();
        } catch (ExecutionException e) {
            throw unwrap(e);
        } catch (InterruptedException e) {
            throw interrupted(future, "interrupted while waiting for the idempotent operation");
        }
    }

    @Override
    public <T> CompletableFuture<IdempotentResult<T>> executeAsync(IdempotentRequest operation, Argument<T> bodyType) {
        Objects.requireNonNull(operation, "operation");
        Objects.requireNonNull(bodyType, "bodyType");
        Keys.Chosen key;
        try {
            // C1: made once per logical operation, BEFORE the first attempt, reused by every retry;
            // C11: inside an operation under the filter, derived from it and the call's step
            key = Keys.choose(operation.key().orElse(null), operation.step().orElse(null),
                operation.method().name(), stepPath(operation.uri()), config);
        } catch (RuntimeException e) {
            return CompletableFuture.failedFuture(e);
        }
        if (http == null) {
            return CompletableFuture.failedFuture(new IllegalStateException(
                "this idempotent client drives declarative @IdempotentCall methods only; it has no HttpClient"));
        }
        OperationAttempts<T> run = new OperationAttempts<>(this, http, operation, bodyType, key);
        run.schedule();
        return run.promise;
    }

    /** @return the part of a call's URI that names its default step: the path, without a query */
    private static String stepPath(URI uri) {
        String path = uri.getRawPath();
        return path == null || path.isEmpty() ? uri.toString() : path;
    }

    /**
     * Runs one invocation of a declarative {@code @Client} method annotated with
     * {@link IdempotentCall}: every attempt re-invokes the rest of the interceptor chain (the
     * HTTP client advice re-binds the request, and {@link IdempotencyKeyClientFilter} puts this
     * invocation's key on it), ON THE CALLING THREAD, between waits of the configured sleeper.
     *
     * @param call the invocation, its key already made and validated
     * @return what the method returns
     */
    public Object invoke(DeclarativeCall call) {
        InvocationAttempts run = new InvocationAttempts(this, call, false);
        InvocationAttempts.CallerThreadLoop loop = run.loop;
        run.schedule();
        try {
            Object value = loop.drain(run.promise);
            DeclarativeCall.LAST.set(run.result);
            return value;
        } catch (InterruptedException e) {
            throw interrupted(run.promise, "interrupted while running the idempotent call");
        } catch (ExecutionException e) {
            throw unwrap(e);
        }
    }

    /**
     * Runs a declarative invocation whose method returns a {@code CompletionStage} or a
     * {@code Publisher}, with the same policy, key and outcomes as {@link #invoke}, without
     * blocking any thread: each attempt's stage (or publisher's first item) is awaited by callback,
     * and the waits between attempts are the sleeper's. Attempts after the first run in the
     * caller's propagated context, on whichever thread completed the previous step.
     *
     * @param call the invocation, its key already made and validated
     * @return the value the method's stage completes with; failed as {@link #invoke} would throw
     */
    public CompletableFuture<Object> invokeAsync(DeclarativeCall call) {
        InvocationAttempts run = new InvocationAttempts(this, call, true);
        run.schedule();
        return run.promise;
    }

    /** The operation's own failure, as the blocking caller should see it. */
    private static RuntimeException unwrap(ExecutionException e) {
        Throwable cause = e.getCause();
        if (cause instanceof RuntimeException re) {
            return re;
        }
        if (cause instanceof Error err) {
            throw err;
        }
        return new IllegalStateException(cause);
    }

    /** Cancels the operation and keeps the thread's interrupt. */
    private static CancellationException interrupted(Future<?> operation, String message) {
        operation.cancel(true);
        Thread.currentThread().interrupt();
        return new CancellationException(message);
    }

    public JsonMapper mapper() {
        JsonMapper m = jsonMapper;
        if (m == null) {
            m = JsonMapper.createDefault();
            jsonMapper = m;
        }
        return m;
    }

}
