package dev.idempotency.store.tck;

import dev.idempotency.server.Idempotent;
import dev.idempotency.server.IdempotentOperation;
import io.micronaut.context.annotation.Requires;
import io.micronaut.context.annotation.Value;
import io.micronaut.http.MediaType;
import io.micronaut.http.annotation.Body;
import io.micronaut.http.annotation.Controller;
import io.micronaut.http.annotation.Post;
import io.micronaut.scheduling.TaskExecutors;
import io.micronaut.scheduling.annotation.ExecuteOn;
import reactor.core.publisher.Flux;
import reactor.core.publisher.Mono;
import reactor.core.scheduler.Schedulers;

import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;

/**
 * The routes {@link RollingRestartSuite} drives on each of its instances: each holds its request
 * until the test opens {@link #gate}, under a lease of one second, so a request that runs through
 * a shutdown outlives its lease several times. Present only with
 * {@code spec.name=RollingRestartSuite}.
 */
@Controller("/rr")
@Requires(property = "spec.name", value = RollingRestartSuite.SPEC)
public class RollingRestartApi {

    /** How often each record's operation ran, on every instance of the JVM. */
    static final Map<String, AtomicInteger> EXECUTIONS = new ConcurrentHashMap<>();

    volatile CountDownLatch gate = new CountDownLatch(0);
    volatile CountDownLatch entered = new CountDownLatch(0);
    private final String instance;

    RollingRestartApi(@Value("${rolling-restart.instance}") String instance) {
        this.instance = instance;
    }

    @Post("/orders")
    @Idempotent(lease = "1s")
    @ExecuteOn(TaskExecutors.BLOCKING)
    Map<String, Object> order(@Body Map<String, Object> body, IdempotentOperation operation)
        throws InterruptedException {
        int n = ran(operation);
        entered.countDown();
        awaitGate();
        return Map.of("execution", n, "instance", instance, "record", operation.recordId());
    }

    @Post("/orders-waiting")
    @Idempotent(lease = "1s", inFlightWait = "10s")
    @ExecuteOn(TaskExecutors.BLOCKING)
    Map<String, Object> orderWaiting(@Body Map<String, Object> body, IdempotentOperation operation)
        throws InterruptedException {
        return order(body, operation);
    }

    /** Two events at once, the third once the gate opens. */
    @Post(value = "/events", produces = MediaType.TEXT_EVENT_STREAM)
    @Idempotent(lease = "1s")
    Flux<String> events(@Body Map<String, Object> body, IdempotentOperation operation) {
        int n = ran(operation);
        Mono<String> last = Mono.fromCallable(() -> {
            awaitGate();
            return "event 2 of " + n + " on " + instance;
        }).subscribeOn(Schedulers.boundedElastic());
        return Flux.just("event 0 of " + n, "event 1 of " + n).doOnComplete(entered::countDown).concatWith(last);
    }

    private static int ran(IdempotentOperation operation) {
        return EXECUTIONS.computeIfAbsent(operation.recordId(), k -> new AtomicInteger()).incrementAndGet();
    }

    private void awaitGate() throws InterruptedException {
        if (!gate.await(30, TimeUnit.SECONDS)) {
            throw new IllegalStateException("gate never opened");
        }
    }
}
