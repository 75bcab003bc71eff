package dev.idempotency.store.tck;

import dev.idempotency.server.Idempotent;
import dev.idempotency.server.IdempotentOperation;
import io.micronaut.context.annotation.Requires;
import io.micronaut.http.HttpResponse;
import io.micronaut.http.HttpStatus;
import io.micronaut.http.MediaType;
import io.micronaut.http.annotation.Body;
import io.micronaut.http.annotation.Controller;
import io.micronaut.http.annotation.Post;
import io.micronaut.scheduling.TaskExecutors;
import io.micronaut.scheduling.annotation.ExecuteOn;
import reactor.core.publisher.Flux;
import reactor.core.publisher.Mono;

import java.time.Duration;
import java.util.Map;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;

/**
 * The routes {@link NonBlockingFilterSuite} drives: blocking ones on the blocking executor, as
 * applications must declare them, and reactive ones on the event loop. Present only with
 * {@code spec.name=NonBlockingFilterSuite}.
 */
@Controller("/nb")
@Requires(property = "spec.name", value = NonBlockingFilterSuite.SPEC)
public class NonBlockingApi {
    /** How many times the work of a durable step of {@code /steps} ran. */
    public final AtomicInteger stepRuns = new AtomicInteger();
    private final Map<String, AtomicInteger> stepExecutions = new java.util.concurrent.ConcurrentHashMap<>();

    final AtomicInteger executions = new AtomicInteger();
    volatile CountDownLatch gate = new CountDownLatch(0);
    volatile CountDownLatch entered = new CountDownLatch(0);

    @Post("/blocking")
    @Idempotent
    @ExecuteOn(TaskExecutors.BLOCKING)
    Map<String, Object> blocking(@Body Map<String, Object> body) throws InterruptedException {
        int n = executions.incrementAndGet();
        entered.countDown();
        if (!gate.await(30, TimeUnit.SECONDS)) {
            throw new IllegalStateException("gate never opened");
        }
        return Map.of("execution", n, "echo", body);
    }

    /** Like {@code /blocking}, under a lease short enough for a test to outlive. */
    @Post("/long")
    @Idempotent(lease = "1s")
    @ExecuteOn(TaskExecutors.BLOCKING)
    Map<String, Object> longRunning(@Body Map<String, Object> body) throws InterruptedException {
        return blocking(body);
    }

    @Post("/wait")
    @Idempotent(inFlightWait = "10s")
    @ExecuteOn(TaskExecutors.BLOCKING)
    Map<String, Object> waitFor(@Body Map<String, Object> body) throws InterruptedException {
        return blocking(body);
    }

    /** A multipart upload, fingerprinted by its parts on the event loop (S7). */
    @Post(value = "/upload", consumes = MediaType.MULTIPART_FORM_DATA)
    @Idempotent
    Mono<HttpResponse<Map<String, Object>>> upload(@io.micronaut.http.annotation.Part("purpose") String purpose) {
        return Mono.just(HttpResponse.created(Map.<String, Object>of("execution", executions.incrementAndGet(),
            "purpose", purpose)));
    }

    /** A key in a JSON body member (S4), read on the event loop. */
    @Post("/body-key")
    @Idempotent(keyPointer = "/idempotency_key")
    Mono<Map<String, Object>> bodyKey(@Body Map<String, Object> body) {
        return Mono.just(Map.of("execution", executions.incrementAndGet()));
    }

    /** A webhook's own delivery id as the key (S4). */
    @Post("/webhook")
    @Idempotent(keyHeader = "webhook-id")
    Mono<HttpResponse<Void>> webhook(@Body Map<String, Object> body) {
        executions.incrementAndGet();
        return Mono.just(HttpResponse.noContent());
    }

    @Post("/mono")
    @Idempotent
    Mono<HttpResponse<Map<String, Object>>> mono(@Body Map<String, Object> body) {
        return Mono.delay(Duration.ofMillis(2))
            .map(t -> HttpResponse.created(Map.<String, Object>of("execution", executions.incrementAndGet())));
    }

    @Post("/future")
    @Idempotent
    CompletableFuture<Map<String, Object>> future(@Body Map<String, Object> body) {
        return CompletableFuture.supplyAsync(() -> Map.of("execution", executions.incrementAndGet()),
            CompletableFuture.delayedExecutor(2, TimeUnit.MILLISECONDS));
    }

    @Post(value = "/stream", produces = MediaType.TEXT_EVENT_STREAM)
    @Idempotent
    Flux<String> stream(@Body Map<String, Object> body) {
        int n = executions.incrementAndGet();
        return Flux.range(0, 5).delayElements(Duration.ofMillis(1)).map(i -> "event " + i + " of " + n);
    }

    /**
     * Two durable steps (CONTRACT S23) on the event loop (in transactional mode too), then 503 on an operation's first
     * execution: its retry resumes both steps from the store without running them.
     */
    @Post("/steps")
    @Idempotent
    CompletionStage<HttpResponse<Map<String, Object>>> steps(@Body Map<String, Object> body) {
        IdempotentOperation op = IdempotentOperation.required();
        return op.stepAsync("first", Integer.class, () -> CompletableFuture.supplyAsync(stepRuns::incrementAndGet,
                CompletableFuture.delayedExecutor(2, TimeUnit.MILLISECONDS)))
            .thenCompose(first -> op.stepAsync("second", Integer.class,
                    () -> CompletableFuture.completedFuture(stepRuns.incrementAndGet()))
                .thenApply(second -> {
                    Map<String, Object> result = Map.of("first", first, "second", second);
                    boolean firstExecution = stepExecutions.computeIfAbsent(op.recordId(), k -> new AtomicInteger())
                        .incrementAndGet() == 1;
                    return firstExecution ? HttpResponse.<Map<String, Object>>status(HttpStatus.SERVICE_UNAVAILABLE)
                        .body(result) : HttpResponse.created(result);
                }));
    }

    /**
     * An atomic phase (CONTRACT S23 on PostgreSQL): an asynchronous transactional step, whose work
     * and record commit in one transaction of the store (leased mode), or inside the attempt's
     * transaction (transactional mode). Only a store that keeps records in database transactions
     * has it; {@link NonBlockingFilterSuite#atomicStepsBlockNothing()} is for those.
     */
    @Post("/atomic-step")
    @Idempotent
    CompletionStage<HttpResponse<Map<String, Object>>> atomicStep(@Body Map<String, Object> body) {
        IdempotentOperation op = IdempotentOperation.required();
        return op.step("atomic", Integer.class).transactional()
            .runAsync(() -> CompletableFuture.completedFuture(stepRuns.incrementAndGet()))
            .thenApply(n -> HttpResponse.created(Map.<String, Object>of("step", n)));
    }

    @Post("/fail")
    @Idempotent
    HttpResponse<Map<String, Object>> fail(@Body Map<String, Object> body) {
        return HttpResponse.<Map<String, Object>>status(HttpStatus.SERVICE_UNAVAILABLE)
            .body(Map.of("execution", executions.incrementAndGet()));
    }

    /** Blocks the event loop on purpose: the guard's own test proves it sees this. */
    @Post("/blocks-the-event-loop")
    Map<String, Object> blocksTheEventLoop() throws InterruptedException {
        Thread.sleep(5);
        return Map.of();
    }

    @Post("/throw")
    @Idempotent
    Map<String, Object> fails(@Body Map<String, Object> body) {
        executions.incrementAndGet();
        throw new IllegalStateException("handler failed");
    }
}
