package dev.idempotency.store.tck;

import dev.idempotency.server.Idempotent;
import dev.idempotency.server.IdempotentOperation;
import io.micronaut.context.annotation.Requires;
import io.micronaut.context.annotation.Value;
import io.micronaut.core.order.Ordered;
import io.micronaut.http.HttpRequest;
import io.micronaut.http.MediaType;
import io.micronaut.http.annotation.Body;
import io.micronaut.http.annotation.Controller;
import io.micronaut.http.annotation.Post;
import io.micronaut.http.annotation.RequestFilter;
import io.micronaut.http.annotation.ServerFilter;
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
 * until the test opens {@link #gate}, under a lease of two seconds, so a request that runs through
 * a shutdown outlives its lease. One held request per instance at a time: a test sets
 * {@link #gate}, {@link #entered} and {@link #arrivals} before each. Present only with
 * {@code spec.name=RollingRestartSuite}.
 */
@Controller("/rr")
@Requires(property = "spec.name", value = RollingRestartSuite.SPEC)
public class RollingRestartApi {

    /** How often each record's operation ran, on every instance of the JVM. */
    static final Map<String, AtomicInteger> EXECUTIONS = new ConcurrentHashMap<>();

    volatile CountDownLatch gate = new CountDownLatch(0);
    volatile CountDownLatch entered = new CountDownLatch(0);
    /** Counted down by every request this instance has read, before the idempotency filter sees it. */
    volatile CountDownLatch arrivals = new CountDownLatch(0);
    /** The record id of the latest request that entered a handler. */
    volatile String lastRecord;
    private final String instance;

    RollingRestartApi(@Value("${rolling-restart.instance}") String instance) {
        this.instance = instance;
    }

    @Post("/orders")
    @Idempotent(lease = "2s")
    @ExecuteOn(TaskExecutors.BLOCKING)
    Map<String, Object> order(@Body Map<String, Object> body, IdempotentOperation operation)
        throws InterruptedException {
        int n = ran(operation);
        lastRecord = operation.recordId();
        entered.countDown();
        awaitGate();
        return Map.of("execution", n, "instance", instance, "record", operation.recordId());
    }

    @Post("/orders-waiting")
    @Idempotent(lease = "2s", inFlightWait = "10s")
    @ExecuteOn(TaskExecutors.BLOCKING)
    Map<String, Object> orderWaiting(@Body Map<String, Object> body, IdempotentOperation operation)
        throws InterruptedException {
        return order(body, operation);
    }

    /** A charge as a durable step (CONTRACT S23), then held: a cut-off run's charge is resumed by the next. */
    @Post("/charges")
    @Idempotent(lease = "2s", inFlightWait = "10s")
    @ExecuteOn(TaskExecutors.BLOCKING)
    Map<String, Object> charge(@Body Map<String, Object> body, IdempotentOperation operation)
        throws InterruptedException {
        int n = ran(operation);
        String charge = operation.step("charge", String.class, () -> "ch_" + instance + "_" + n);
        lastRecord = operation.recordId();
        entered.countDown();
        awaitGate();
        return Map.of("execution", n, "instance", instance, "record", operation.recordId(), "charge", charge);
    }

    /** Two events at once, the third once the gate opens. */
    @Post(value = "/events", produces = MediaType.TEXT_EVENT_STREAM)
    @Idempotent(lease = "2s")
    Flux<String> events(@Body Map<String, Object> body, IdempotentOperation operation) {
        int n = ran(operation);
        lastRecord = operation.recordId();
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

    /** Counts the requests of {@code /rr} as the server reads them, so a test knows a request is in. */
    @ServerFilter("/rr/**")
    @Requires(property = "spec.name", value = RollingRestartSuite.SPEC)
    static final class Arrivals implements Ordered {
        private final RollingRestartApi api;

        Arrivals(RollingRestartApi api) {
            this.api = api;
        }

        @RequestFilter
        void arrived(HttpRequest<?> request) {
            api.arrivals.countDown();
        }

        @Override
        public int getOrder() {
            return HIGHEST_PRECEDENCE;
        }
    }
}
