package dev.idempotency.client;

import io.github.resilience4j.retry.Retry;
import io.github.resilience4j.retry.RetryConfig;
import io.github.resilience4j.retry.RetryRegistry;
import io.micronaut.core.propagation.PropagatedContext;
import io.micronaut.core.type.Argument;
import io.micronaut.http.HttpRequest;
import io.micronaut.http.HttpResponse;
import io.micronaut.http.MediaType;
import io.micronaut.http.MutableHttpRequest;
import io.micronaut.http.client.HttpClient;
import io.micronaut.http.client.exceptions.HttpClientResponseException;
import io.micronaut.json.JsonMapper;
import org.reactivestreams.Publisher;
import org.reactivestreams.Subscriber;
import org.reactivestreams.Subscription;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.time.Instant;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.concurrent.CancellationException;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.Executor;
import java.util.concurrent.Future;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.concurrent.atomic.AtomicReference;

/**
 * Drives the attempts of an operation. The resilience4j {@link Retry} is the engine: its
 * {@link Retry.AsyncContext} decides (result and exception predicates, max attempts), computes the
 * wait through {@link Backoff}, counts and publishes the events. The async context is used for
 * the blocking form too, because it returns the wait instead of sleeping through resilience4j's
 * global {@code Thread::sleep}: the wait goes through the configured {@link Sleeper}, and checks
 * the engine cannot make (deadline, Retry-After past the deadline, retry budget) come first.
 */
final class DefaultIdempotentClient implements IdempotentClient {

    private static final Logger LOG = LoggerFactory.getLogger(IdempotentClient.class);
    private static final byte[] EMPTY = new byte[0];
    private static final Argument<Map<String, Object>> JSON_OBJECT = Argument.mapOf(String.class, Object.class);

    private final HttpClient http;
    private final IdempotentClientConfig config;
    private final Retry retry;
    private final RetryBudget.Registry budgets;
    private final ClientMetrics metrics;
    private volatile JsonMapper jsonMapper;

    /**
     * @param http   the HTTP client of the programmatic API; {@code null} for an engine that only
     *               drives declarative calls ({@link IdempotentCall})
     * @param config the settings
     */
    DefaultIdempotentClient(HttpClient http, IdempotentClientConfig config) {
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
    public <T> IdempotentResult<T> execute(IdempotentOperation operation, Argument<T> bodyType) {
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
    public <T> CompletableFuture<IdempotentResult<T>> executeAsync(IdempotentOperation operation, Argument<T> bodyType) {
        Objects.requireNonNull(operation, "operation");
        Objects.requireNonNull(bodyType, "bodyType");
        String key;
        try {
            // C1: made once per logical operation, BEFORE the first attempt, reused by every retry
            key = Keys.validate(operation.key().orElseGet(config.keyGenerator()), config.keyFormat());
        } catch (RuntimeException e) {
            return CompletableFuture.failedFuture(e);
        }
        if (http == null) {
            return CompletableFuture.failedFuture(new IllegalStateException(
                "this idempotent client drives declarative @IdempotentCall methods only; it has no HttpClient"));
        }
        OperationRun<T> run = new OperationRun<>(operation, bodyType, key);
        run.schedule();
        return run.promise;
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
    Object invoke(DeclarativeCall call) {
        InvocationRun run = new InvocationRun(call, false);
        CallerThreadLoop loop = run.loop;
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
    CompletableFuture<Object> invokeAsync(DeclarativeCall call) {
        InvocationRun run = new InvocationRun(call, true);
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

    private JsonMapper mapper() {
        JsonMapper m = jsonMapper;
        if (m == null) {
            m = JsonMapper.createDefault();
            jsonMapper = m;
        }
        return m;
    }

    /** What one attempt produced: the response (status, headers, bytes) and, for a declarative call, what the method returned. */
    record Sent(IdempotentResult<byte[]> response, @io.micronaut.core.annotation.Nullable Object value, boolean returned) {
    }

    /**
     * One operation's attempts: the retry loop shared by the programmatic API and the declarative
     * calls. Its steps run one after the other, never concurrently; a subclass says how an attempt
     * is sent ({@link #send}), what success returns ({@link #success}) and where a step runs
     * ({@link #dispatch}).
     *
     * @param <R> what the operation completes with
     */
    private abstract class Run<R> {
        final String key;
        final String headerValue;
        final Instant deadline;
        final Retry.AsyncContext<Attempt> engine;
        final RetryBudget budget;
        final String target;
        final boolean replayable;
        final CompletableFuture<R> promise = new CompletableFuture<>();
        int attempts;

        Run(String key, String target, boolean replayable) {
            this.key = key;
            this.headerValue = Keys.headerValue(key, config.keyFormat());
            this.deadline = config.clock().instant().plus(config.deadline());
            this.engine = retry.asyncContext();
            this.target = target;
            this.budget = budgets == null ? null : budgets.forTarget(target);
            this.replayable = replayable;
        }

        /** Sends one attempt; the future never fails with an {@link HttpClientResponseException}. */
        abstract CompletableFuture<Sent> send(Duration timeout, int number);

        /** @return the operation's result from its final successful attempt */
        abstract R success(Sent sent, int number);

        /** @return the operation for the retry log line, e.g. {@code POST /payments} */
        abstract String describe();

        /** Runs the next step: at once (programmatic) or on the caller's thread (declarative). */
        void dispatch(Runnable step) {
            step.run();
        }

        void schedule() {
            dispatch(this::next);
        }

        Duration remaining() {
            return Duration.between(config.clock().instant(), deadline);
        }

        void next() {
            if (promise.isDone()) {
                return; // cancelled by the caller
            }
            try {
                Duration remaining = remaining();
                if (remaining.isNegative() || remaining.isZero()) {
                    fail("deadline-exceeded", new DeadlineExceededException("the deadline of " + config.deadline()
                        + " passed before attempt " + (attempts + 1), key, attempts, null, null, null));
                    return;
                }
                attempts++;
                metrics.attempt();
                boolean deadlineBound = remaining.compareTo(config.attemptTimeout()) < 0;
                Duration timeout = deadlineBound ? remaining : config.attemptTimeout();
                int number = attempts;
                send(timeout, number).whenComplete((sent, failure) -> {
                    try {
                        handle(number, sent, failure, deadlineBound);
                    } catch (Throwable t) {
                        fail("error", wrap(t));
                    }
                });
            } catch (Throwable t) {
                fail("error", wrap(t));
            }
        }

        IdempotentResult<byte[]> snapshot(HttpResponse<?> response, int number) {
            byte[] body = response.getBody(byte[].class).orElse(EMPTY);
            Map<String, List<String>> headers = response.getHeaders().asMap();
            boolean replayed = response.getHeaders().get(config.replayedHeaderName()) != null
                && "true".equalsIgnoreCase(response.getHeaders().get(config.replayedHeaderName()).trim());
            return new IdempotentResult<>(response.code(), headers, body, body, replayed, number, key);
        }

        void handle(int number, Sent sent, Throwable failure, boolean deadlineBound) {
            if (failure != null) {
                Throwable cause = failure instanceof CompletionException && failure.getCause() != null ? failure.getCause() : failure;
                if (deadlineBound && cause instanceof TimeoutException) {
                    fail("deadline-exceeded", new DeadlineExceededException("the deadline of " + config.deadline()
                        + " passed during attempt " + number, key, number, null, null, cause));
                    return;
                }
                if (!Classifier.isRetryableFailure(cause)) {
                    engine.onError(cause); // ignored by the engine: publishes RetryOnIgnoredErrorEvent
                    fail("error", new IdempotentRequestException("the request failed with an error that is not retried",
                        key, number, null, null, cause));
                    return;
                }
                retryOrFail(number, null, cause);
                return;
            }
            IdempotentResult<byte[]> response = sent.response();
            ProblemDetails problem = problem(response);
            // a declarative method that returned normally succeeded (Micronaut returns 404 as null/empty, not an error)
            Classifier.Verdict verdict = sent.returned() ? Classifier.Verdict.SUCCESS
                : Classifier.classify(response.status(), problem, config.retryableStatuses());
            Attempt attempt = new Attempt(number, response, problem, verdict,
                RetryAfter.parse(response.header("Retry-After").orElse(null), config.clock().instant()).orElse(null));
            if (verdict == Classifier.Verdict.RETRY) {
                retryOrFail(number, attempt, null);
                return;
            }
            engine.onResult(attempt);
            engine.onComplete();
            if (budget != null && response.status() < 500) {
                budget.onSuccess();
            }
            if (verdict == Classifier.Verdict.SUCCESS) {
                R result = success(sent, number);
                metrics.outcome(response.replayed() ? "replayed" : "success");
                promise.complete(result);
            } else if (response.status() == 422 && problem != null && problem.hasCode(ProblemDetails.KEY_REUSED)) {
                fail("key-reused", new IdempotencyKeyReusedException(
                    "the server refused the request: this Idempotency-Key was already used with a different request "
                        + "(not retried; use a new key for a new operation, or resend the original payload)",
                    key, number, response, problem, null));
            } else {
                fail("non-retryable", new NonRetryableStatusException("the server answered " + response.status()
                    + (response.status() == 409 ? " (a conflict from the application, not the in-flight 409; not retried)" : ", which is not retried"),
                    key, number, response, problem, null));
            }
        }

        void retryOrFail(int number, Attempt attempt, Throwable cause) {
            IdempotentResult<byte[]> response = attempt == null ? null : attempt.response();
            ProblemDetails problem = attempt == null ? null : attempt.problem();
            String reason = attempt != null ? Classifier.reason(attempt) : Classifier.reason(cause);
            boolean inProgress = response != null && response.status() == 409;
            if (!replayable) {
                tellEngineFinal(attempt, cause);
                fail("retries-exhausted", new RetriesExhaustedException("attempt " + number + " failed (" + reason
                    + ") and the body is a stream that cannot be sent again, so it is not retried", key, number, response, problem, cause));
                return;
            }
            if (number >= config.maxAttempts()) {
                tellEngineFinal(attempt, cause);
                String message = "all " + number + " attempts failed; the last with " + reason;
                fail(inProgress ? "in-progress" : "retries-exhausted", inProgress
                    ? new RequestInProgressException(message + ": the original request with this key is still running; "
                        + "retry later with the same key and payload", key, number, response, problem, cause)
                    : new RetriesExhaustedException(message, key, number, response, problem, cause));
                return;
            }
            Duration remaining = remaining();
            if (attempt != null && attempt.retryAfter() != null && attempt.retryAfter().compareTo(remaining) >= 0) {
                fail("deadline-exceeded", new DeadlineExceededException("attempt " + number + " got " + reason
                    + " with Retry-After " + attempt.retryAfter().toSeconds() + " s, past the deadline (" + remaining.toMillis()
                    + " ms left); not waiting", key, number, response, problem, cause));
                return;
            }
            long interval = attempt != null ? engine.onResult(attempt) : engine.onError(cause);
            if (interval < 0) {
                fail("retries-exhausted", new RetriesExhaustedException("attempt " + number + " failed (" + reason
                    + ") and the retry engine refused another attempt", key, number, response, problem, cause));
                return;
            }
            Duration wait = Duration.ofMillis(interval);
            if (wait.compareTo(remaining) >= 0) {
                fail("deadline-exceeded", new DeadlineExceededException("attempt " + number + " failed (" + reason
                    + ") and the next wait of " + wait.toMillis() + " ms would end after the deadline ("
                    + remaining.toMillis() + " ms left)", key, number, response, problem, cause));
                return;
            }
            // last: a token is spent only on a retry that will really be sent
            if (budget != null && !budget.tryAcquire()) {
                fail("budget-exhausted", new RetryBudgetExhaustedException("attempt " + number + " failed (" + reason
                    + ") and the retry budget of " + target + " is empty; failing fast instead of retrying",
                    key, number, response, problem, cause));
                return;
            }
            // C10: exactly one line per retry
            LOG.info("Idempotent {}: attempt {} of {} failed ({}); retrying in {} ms with Idempotency-Key {}",
                describe(), number, config.maxAttempts(), reason, wait.toMillis(), key);
            metrics.retry(attempt != null ? Classifier.reasonTag(attempt) : Classifier.reasonTag(cause));
            config.sleeper().sleep(wait).whenComplete((ignored, error) -> {
                if (error != null) {
                    fail("error", wrap(error));
                } else {
                    schedule();
                }
            });
        }

        void tellEngineFinal(Attempt attempt, Throwable cause) {
            if (attempt != null) {
                engine.onResult(attempt);
                engine.onComplete();
            } else {
                engine.onError(cause);
            }
        }

        void fail(String outcome, Throwable error) {
            metrics.outcome(outcome);
            promise.completeExceptionally(error);
        }

        IdempotentRequestException wrap(Throwable t) {
            return t instanceof IdempotentRequestException e ? e
                : new IdempotentRequestException("the idempotent operation failed", key, attempts, null, null, t);
        }

        ProblemDetails problem(IdempotentResult<byte[]> response) {
            if (response.status() < 400 || response.bodyBytes().length == 0) {
                return null;
            }
            String type = response.header("Content-Type").orElse("");
            if (!type.toLowerCase(java.util.Locale.ROOT).startsWith(MediaType.APPLICATION_JSON_PROBLEM)) {
                return null;
            }
            try {
                Map<String, Object> json = mapper().readValue(response.bodyBytes(), JSON_OBJECT);
                Object status = json.get("status");
                return new ProblemDetails(string(json.get("type")), string(json.get("code")), string(json.get("title")),
                    string(json.get("detail")), status instanceof Number n ? n.intValue() : 0);
            } catch (IOException | RuntimeException unreadable) {
                return null;
            }
        }

    }

    /** The programmatic API's operation: builds the request itself and decodes the final body. */
    private final class OperationRun<T> extends Run<IdempotentResult<T>> {
        final IdempotentOperation op;
        final Argument<T> bodyType;

        OperationRun(IdempotentOperation op, Argument<T> bodyType, String key) {
            super(key, RetryBudget.target(op.uri(), config.name()), op.replayable());
            this.op = op;
            this.bodyType = bodyType;
        }

        @Override
        String describe() {
            return op.method() + " " + op.uri();
        }

        @Override
        IdempotentResult<T> success(Sent sent, int number) {
            IdempotentResult<byte[]> response = sent.response();
            return new IdempotentResult<>(response.status(), response.headers(),
                response.bodyBytes(), decode(response), response.replayed(), number, key);
        }

        MutableHttpRequest<Object> request() {
            MutableHttpRequest<Object> request = HttpRequest.create(op.method(), op.uri().toString());
            op.headers().forEach((name, values) -> values.forEach(v -> request.header(name, v)));
            op.contentType().ifPresent(request::contentType);
            op.body().ifPresent(request::body);
            request.getHeaders().remove(config.headerName());
            request.header(config.headerName(), headerValue);
            return request;
        }

        @Override
        CompletableFuture<Sent> send(Duration timeout, int number) {
            HttpRequest<?> request = request();
            CompletableFuture<Sent> future = new CompletableFuture<>();
            AtomicReference<Subscription> subscription = new AtomicReference<>();
            Publisher<HttpResponse<byte[]>> publisher = http.exchange(request, Argument.of(byte[].class), Argument.of(byte[].class));
            publisher.subscribe(new Subscriber<>() {
                @Override
                public void onSubscribe(Subscription s) {
                    subscription.set(s);
                    if (future.isDone()) {
                        s.cancel();
                    } else {
                        s.request(1);
                    }
                }

                @Override
                public void onNext(HttpResponse<byte[]> response) {
                    future.complete(new Sent(snapshot(response, number), null, false));
                }

                @Override
                public void onError(Throwable t) {
                    if (t instanceof HttpClientResponseException e) {
                        future.complete(new Sent(snapshot(e.getResponse(), number), null, false));
                    } else {
                        future.completeExceptionally(t);
                    }
                }

                @Override
                public void onComplete() {
                    future.completeExceptionally(new IOException("the connection closed without a response"));
                }
            });
            future.orTimeout(timeout.toNanos(), TimeUnit.NANOSECONDS).whenComplete((r, e) -> {
                if (e instanceof TimeoutException) {
                    Subscription s = subscription.get();
                    if (s != null) {
                        s.cancel();
                    }
                }
            });
            return future;
        }

        @SuppressWarnings("unchecked")
        T decode(IdempotentResult<byte[]> response) {
            byte[] bytes = response.bodyBytes();
            Class<T> type = bodyType.getType();
            if (type == byte[].class) {
                return (T) bytes;
            }
            if (bytes.length == 0 || type == Void.class || type == void.class) {
                return null;
            }
            if (type == String.class || type == CharSequence.class) {
                return (T) new String(bytes, StandardCharsets.UTF_8);
            }
            try {
                return mapper().readValue(bytes, bodyType);
            } catch (IOException | RuntimeException e) {
                throw new IdempotentRequestException("the response body could not be decoded as " + bodyType,
                    key, response.attempts(), response, null, e);
            }
        }
    }

    /**
     * One invocation of a declarative method: each attempt is {@code context.proceed(interceptor)}
     * (the HTTP client advice binds and sends a fresh request; the key filter adds this
     * invocation's key), run on the caller's thread through {@link CallerThreadLoop}.
     */
    private final class InvocationRun extends Run<Object> {
        final DeclarativeCall call;
        /** The caller's thread, for a blocking method; {@code null} for an asynchronous one. */
        final CallerThreadLoop loop;
        final PropagatedContext context = PropagatedContext.getOrEmpty();
        volatile IdempotentResult<Object> result;

        InvocationRun(DeclarativeCall call, boolean async) {
            super(call.key(), call.budgetTarget(), true);
            this.call = call;
            this.loop = async ? null : new CallerThreadLoop();
        }

        @Override
        void dispatch(Runnable step) {
            if (loop != null) {
                loop.execute(step);
                return;
            }
            try (PropagatedContext.Scope ignored = context.propagate()) {
                step.run();
            }
        }

        @Override
        String describe() {
            return call.describe();
        }

        @Override
        CompletableFuture<Sent> send(Duration timeout, int number) {
            call.beginAttempt(headerValue);
            try {
                Object value = call.proceed();
                if (loop == null) {
                    return settled(value, number);
                }
                HttpResponse<?> response = value instanceof HttpResponse<?> r ? r : call.lastResponse();
                IdempotentResult<byte[]> snapshot = response != null ? snapshot(response, number)
                    : new IdempotentResult<>(200, Map.of(), EMPTY, EMPTY, false, number, key);
                return CompletableFuture.completedFuture(new Sent(snapshot, value, true));
            } catch (HttpClientResponseException e) {
                return CompletableFuture.completedFuture(new Sent(snapshot(e.getResponse(), number), null, false));
            } catch (Throwable t) {
                return CompletableFuture.failedFuture(t);
            }
        }

        /** An asynchronous method's attempt: its stage, or its publisher's first item, once there. */
        private CompletableFuture<Sent> settled(Object value, int number) {
            CompletableFuture<Object> outcome = value instanceof CompletionStage<?> stage
                ? stage.toCompletableFuture().thenApply(v -> (Object) v)
                : value instanceof Publisher<?> publisher ? first(publisher) : CompletableFuture.completedFuture(value);
            return outcome.handle((v, failure) -> {
                if (failure == null) {
                    HttpResponse<?> response = v instanceof HttpResponse<?> r ? r : call.lastResponse();
                    IdempotentResult<byte[]> snapshot = response != null ? snapshot(response, number)
                        : new IdempotentResult<>(200, Map.of(), EMPTY, EMPTY, false, number, key);
                    return new Sent(snapshot, v, true);
                }
                Throwable t = failure instanceof CompletionException && failure.getCause() != null ? failure.getCause() : failure;
                if (t instanceof HttpClientResponseException e) {
                    return new Sent(snapshot(e.getResponse(), number), null, false);
                }
                throw t instanceof CompletionException c ? c : new CompletionException(t);
            });
        }

        @Override
        Object success(Sent sent, int number) {
            IdempotentResult<byte[]> r = sent.response();
            Object value = sent.value();
            Object body = value instanceof HttpResponse<?> response ? response.getBody().orElse(null) : value;
            result = new IdempotentResult<>(r.status(), r.headers(), EMPTY, body, r.replayed(), number, key);
            return value;
        }
    }

    /**
     * Runs the steps of a declarative call on the thread that called the method, so every attempt
     * sees that thread's context (propagated context, MDC, security) exactly as a plain call would.
     */
    private static final class CallerThreadLoop implements Executor {
        private static final Runnable WAKE_UP = () -> { };
        private final BlockingQueue<Runnable> steps = new LinkedBlockingQueue<>();

        @Override
        public void execute(Runnable step) {
            steps.add(step);
        }

        <R> R drain(CompletableFuture<R> promise) throws InterruptedException, ExecutionException {
            promise.whenComplete((r, e) -> steps.add(WAKE_UP));
            while (!promise.isDone()) {
                steps.take().run();
            }
            return promise.get();
        }
    }

    /** @return the first item {@code publisher} emits, or {@code null} when it completes empty */
    private static CompletableFuture<Object> first(Publisher<?> publisher) {
        CompletableFuture<Object> first = new CompletableFuture<>();
        publisher.subscribe(new Subscriber<Object>() {
            private Subscription subscription;

            @Override
            public void onSubscribe(Subscription s) {
                subscription = s;
                s.request(1);
            }

            @Override
            public void onNext(Object item) {
                if (first.complete(item)) {
                    subscription.cancel();
                }
            }

            @Override
            public void onError(Throwable t) {
                first.completeExceptionally(t);
            }

            @Override
            public void onComplete() {
                first.complete(null);
            }
        });
        return first;
    }

    private static String string(Object value) {
        return value == null ? null : value.toString();
    }
}
