package dev.idempotency.server;

import dev.idempotency.server.store.IdempotencyStoreException;
import dev.idempotency.server.store.RecordCounts;
import dev.idempotency.server.store.RecordInfo;
import dev.idempotency.server.store.StoreInspection;
import dev.idempotency.server.store.memory.InMemoryIdempotencyStore;
import io.micrometer.core.instrument.MeterRegistry;
import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import io.micronaut.context.annotation.Factory;
import io.micronaut.context.annotation.Property;
import io.micronaut.context.annotation.Replaces;
import io.micronaut.context.annotation.Requires;
import io.micronaut.http.HttpRequest;
import io.micronaut.http.HttpResponse;
import io.micronaut.http.annotation.Controller;
import io.micronaut.http.annotation.Header;
import io.micronaut.http.annotation.Post;
import io.micronaut.http.client.HttpClient;
import io.micronaut.http.client.annotation.Client;
import io.micronaut.http.client.exceptions.HttpClientResponseException;
import io.micronaut.scheduling.TaskExecutors;
import io.micronaut.scheduling.annotation.ExecuteOn;
import io.micronaut.serde.annotation.Serdeable;
import io.micronaut.test.extensions.junit5.annotation.MicronautTest;
import jakarta.inject.Inject;
import jakarta.inject.Singleton;
import org.junit.jupiter.api.DisplayName;
import org.junit.jupiter.api.Test;

import java.nio.charset.StandardCharsets;
import java.time.Clock;
import java.time.Duration;
import java.util.Map;
import java.util.Set;
import java.util.UUID;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/**
 * CONTRACT S23: durable steps run at most once to completion per operation, on the in-memory
 * store, through a released 5xx, a takeover, abandon(), and the failures they must not hide.
 */
@MicronautTest
@Property(name = "spec.name", value = "DurableStepsTest")
@Property(name = "idempotency.step-max-bytes", value = "1024")
@Property(name = "endpoints.idempotency.enabled", value = "true")
@Property(name = "endpoints.idempotency.sensitive", value = "false")
class DurableStepsTest {

    @Serdeable
    record Reservation(String id, int items) {
    }

    @Serdeable
    record Order(String reservation, String charge, String shipment) {
    }

    /** The in-memory store; renewals of {@link #cutOff} records never arrive, recordings of {@link #failing} ones fail. */
    @Singleton
    @Replaces(InMemoryIdempotencyStore.class)
    @Requires(property = "spec.name", value = "DurableStepsTest")
    static class Store extends InMemoryBackedStore implements dev.idempotency.server.store.StoreInspection {
        final Set<String> cutOff = ConcurrentHashMap.newKeySet();
        final Set<String> failing = ConcurrentHashMap.newKeySet();

        Store(Clock clock) {
            super(new InMemoryIdempotencyStore(clock, 10_000));
        }

        @Override
        public CompletionStage<dev.idempotency.server.store.RecordCounts> counts() {
            return delegate.counts();
        }

        @Override
        public CompletionStage<java.util.List<dev.idempotency.server.store.RecordInfo>> inProgressStartedBefore(
            java.time.Instant startedBefore, int limit) {
            return delegate.inProgressStartedBefore(startedBefore, limit);
        }

        @Override
        public CompletionStage<java.util.Optional<dev.idempotency.server.store.RecordInfo>> find(String storeKey) {
            return delegate.find(storeKey);
        }

        @Override
        public CompletionStage<Boolean> renew(String storeKey, long fencingToken, Duration lease) {
            return cutOff.contains(storeKey) ? new CompletableFuture<>() : super.renew(storeKey, fencingToken, lease);
        }

        @Override
        public CompletionStage<Boolean> recordStep(String storeKey, long fencingToken, String step, byte[] result,
                                                   Duration keep) {
            if (failing.contains(storeKey)) {
                return CompletableFuture.failedFuture(new IdempotencyStoreException("the store is down (test)"));
            }
            return super.recordStep(storeKey, fencingToken, step, result, keep);
        }
    }

    @Factory
    @Requires(property = "spec.name", value = "DurableStepsTest")
    static class Meters {
        @Singleton
        MeterRegistry meterRegistry() {
            return new SimpleMeterRegistry();
        }
    }

    /** An order in three steps, each counting the times its work ran per order. */
    @Controller("/s23")
    @Requires(property = "spec.name", value = "DurableStepsTest")
    static class Api {
        final Map<String, AtomicInteger> runs = new ConcurrentHashMap<>();
        final Map<String, AtomicInteger> executions = new ConcurrentHashMap<>();
        final Map<String, String> records = new ConcurrentHashMap<>();
        final Store store;

        Api(Store store) {
            this.store = store;
        }

        int runs(String what) {
            AtomicInteger n = runs.get(what);
            return n == null ? 0 : n.get();
        }

        private String effect(String what, String order) {
            return what + "-" + order + "-" + runs.computeIfAbsent(what + ":" + order, k -> new AtomicInteger()).incrementAndGet();
        }

        private boolean failThisTime(String key, int fail) {
            return executions.computeIfAbsent(key, k -> new AtomicInteger()).incrementAndGet() <= fail;
        }

        @Post("/order")
        @Idempotent
        @ExecuteOn(TaskExecutors.BLOCKING)
        HttpResponse<Order> order(@Header("Idempotency-Key") String key, @Header("X-Order") String order,
                                  @Header(value = "X-Fail", defaultValue = "0") int fail,
                                  @Header(value = "X-Abandon", defaultValue = "false") boolean abandon) {
            IdempotentOperation op = IdempotentOperation.required();
            records.put(order, op.recordId());
            Reservation r = op.step("reserve", Reservation.class, () -> new Reservation(effect("reserve", order), 2));
            String charge = op.step("charge", String.class, () -> effect("charge", order));
            if (abandon) {
                op.abandon();
            }
            if (failThisTime(key, fail)) {
                return HttpResponse.serverError(new Order(r.id(), charge, null));
            }
            String shipment = op.step("ship", String.class, () -> effect("ship", order));
            return HttpResponse.created(new Order(r.id(), charge, shipment));
        }

        /** Non-blocking: the route stays on the event loop and its steps' work completes later. */
        @Post("/order-async")
        @Idempotent
        CompletionStage<HttpResponse<Order>> orderAsync(@Header("Idempotency-Key") String key,
                                                        @Header("X-Order") String order,
                                                        @Header(value = "X-Fail", defaultValue = "0") int fail) {
            IdempotentOperation op = IdempotentOperation.required();
            return op.stepAsync("charge", String.class,
                    () -> CompletableFuture.supplyAsync(() -> effect("charge", order),
                        CompletableFuture.delayedExecutor(20, TimeUnit.MILLISECONDS)))
                .thenCompose(charge -> op.stepAsync("ship", String.class,
                    () -> CompletableFuture.completedFuture(effect("ship", order)))
                    .thenApply(ship -> failThisTime(key, fail)
                        ? HttpResponse.<Order>serverError(new Order(null, charge, ship))
                        : HttpResponse.created(new Order(null, charge, ship))));
        }

        @Post("/no-keep")
        @Idempotent(keepSteps = false)
        @ExecuteOn(TaskExecutors.BLOCKING)
        HttpResponse<Order> noKeep(@Header("Idempotency-Key") String key, @Header("X-Order") String order) {
            String charge = IdempotentOperation.required().step("charge", String.class, () -> effect("charge", order));
            return failThisTime(key, 1) ? HttpResponse.serverError(new Order(null, charge, null))
                : HttpResponse.created(new Order(null, charge, null));
        }

        /** A handler cut off from the store after its charge: its one-second lease runs out and the retry takes over. */
        @Post("/takeover")
        @Idempotent(lease = "1s")
        @ExecuteOn(TaskExecutors.BLOCKING)
        HttpResponse<Order> takeover(@Header("Idempotency-Key") String key, @Header("X-Order") String order)
            throws InterruptedException {
            IdempotentOperation op = IdempotentOperation.required();
            String charge = op.step("charge", String.class, () -> effect("charge", order));
            if (executions.computeIfAbsent(key, k -> new AtomicInteger()).incrementAndGet() == 1) {
                store.cutOff.add(op.recordId());
                Thread.sleep(1_600);
            }
            String ship = op.step("ship", String.class, () -> effect("ship", order));
            return HttpResponse.created(new Order(null, charge, ship));
        }

        /** On the event loop (no @ExecuteOn): the blocking form refuses before running its work. */
        @Post("/on-loop")
        @Idempotent
        HttpResponse<Map<String, String>> onLoop(@Header("X-Order") String order) {
            try {
                IdempotentOperation.required().step("charge", String.class, () -> effect("charge", order));
                return HttpResponse.ok(Map.of("error", "none"));
            } catch (IllegalStateException e) {
                return HttpResponse.ok(Map.of("error", e.getMessage()));
            }
        }

        @Post("/misuse")
        @Idempotent
        @ExecuteOn(TaskExecutors.BLOCKING)
        HttpResponse<Map<String, String>> misuse(@Header("X-Order") String order) {
            IdempotentOperation op = IdempotentOperation.required();
            String first = op.step("charge", String.class, () -> effect("charge", order));
            String again = op.step("charge", String.class).repeatable().run(() -> effect("charge", order));
            String duplicate;
            try {
                op.step("charge", String.class, () -> effect("charge", order));
                duplicate = "ran";
            } catch (IllegalStateException e) {
                duplicate = e.getMessage();
            }
            String tooLarge;
            try {
                op.step("big", String.class, () -> "x".repeat(2_000));
                tooLarge = "recorded";
            } catch (StepNotRecordedException e) {
                tooLarge = e.reason() + ": " + e.getMessage();
            }
            String big = op.step("big", String.class, () -> "small now");
            String blank;
            try {
                op.step(" ", String.class, () -> "x");
                blank = "ran";
            } catch (IllegalArgumentException e) {
                blank = e.getMessage();
            }
            return HttpResponse.ok(Map.of("first", first, "again", again, "duplicate", duplicate, "tooLarge", tooLarge,
                "big", big, "blank", blank));
        }

        @Post("/store-down")
        @Idempotent(lease = "1s")
        @ExecuteOn(TaskExecutors.BLOCKING)
        HttpResponse<Order> storeDown(@Header("X-Order") String order, @Header(value = "X-Down", defaultValue = "false") boolean down) {
            IdempotentOperation op = IdempotentOperation.required();
            if (down) {
                store.failing.add(op.recordId());
            } else {
                store.failing.remove(op.recordId());
            }
            String charge = op.step("charge", String.class, () -> effect("charge", order));
            return HttpResponse.created(new Order(null, charge, null));
        }
    }

    @Inject
    @Client("/")
    HttpClient http;

    @Inject
    Api api;

    @Inject
    MeterRegistry meters;

    private HttpResponse<Order> post(String path, String key, String order, Map<String, String> headers) {
        var request = HttpRequest.POST(path, "{}").header("Idempotency-Key", key).header("X-Order", order);
        headers.forEach(request::header);
        try {
            return http.toBlocking().exchange(request, Order.class);
        } catch (HttpClientResponseException e) {
            return HttpResponse.<Order>status(e.getStatus()).body(e.getResponse().getBody(Order.class).orElse(null));
        }
    }

    private double steps(String outcome) {
        var counter = meters.find("idempotency.steps").tag("outcome", outcome).counter();
        return counter == null ? 0 : counter.count();
    }

    @Test
    @DisplayName("S23: after a released 5xx the retry resumes: recorded steps return their results, only the rest runs")
    void releasedFiveHundredResumes() {
        String order = UUID.randomUUID().toString();
        String key = "k-" + order;
        double resumedBefore = steps("resumed");
        HttpResponse<Order> failed = post("/s23/order", key, order, Map.of("X-Fail", "1"));
        assertThat(failed.code()).isEqualTo(500);
        // the operator sees the released operation's steps waiting for the retry (CONTRACT O3)
        Map<?, ?> released = http.toBlocking().retrieve(HttpRequest.GET("/idempotency/" + api.records.get(order)), Map.class);
        assertThat(released.get("state")).isEqualTo("released");
        assertThat((java.util.List<?>) released.get("steps")).hasSize(2)
            .allSatisfy(step -> assertThat(((Map<?, ?>) step).get("resultBytes")).isNotNull());
        assertThat(((Map<?, ?>) ((java.util.List<?>) released.get("steps")).get(0)).get("name")).isEqualTo("reserve");

        HttpResponse<Order> retried = post("/s23/order", key, order, Map.of("X-Fail", "1"));
        assertThat(retried.code()).isEqualTo(201);
        assertThat(retried.body().reservation()).isEqualTo(failed.body().reservation()).isEqualTo("reserve-" + order + "-1");
        assertThat(retried.body().charge()).isEqualTo(failed.body().charge()).isEqualTo("charge-" + order + "-1");
        assertThat(api.runs("reserve:" + order)).isEqualTo(1);
        assertThat(api.runs("charge:" + order)).isEqualTo(1);
        assertThat(api.runs("ship:" + order)).isEqualTo(1);
        assertThat(steps("resumed") - resumedBefore).isEqualTo(2);
        // the completed operation replays; no step runs again
        assertThat(post("/s23/order", key, order, Map.of()).body()).isEqualTo(retried.body());
        assertThat(api.runs("charge:" + order)).isEqualTo(1);
        Map<?, ?> completed = http.toBlocking().retrieve(HttpRequest.GET("/idempotency/" + api.records.get(order)), Map.class);
        assertThat(completed.get("state")).isEqualTo("completed");
        assertThat((java.util.List<?>) completed.get("steps")).hasSize(3);
    }

    @Test
    @DisplayName("S23: the asynchronous form resumes alike, without blocking the event loop")
    void asyncSteps() {
        String order = UUID.randomUUID().toString();
        String key = "k-" + order;
        HttpResponse<Order> failed = post("/s23/order-async", key, order, Map.of("X-Fail", "1"));
        assertThat(failed.code()).isEqualTo(500);
        HttpResponse<Order> retried = post("/s23/order-async", key, order, Map.of("X-Fail", "1"));
        assertThat(retried.code()).isEqualTo(201);
        assertThat(retried.body()).isEqualTo(failed.body());
        assertThat(api.runs("charge:" + order)).isEqualTo(1);
        assertThat(api.runs("ship:" + order)).isEqualTo(1);
    }

    @Test
    @DisplayName("S23: a takeover resumes from the steps the earlier holder recorded; the earlier holder's late step is fenced")
    void takeoverResumes() throws Exception {
        String order = UUID.randomUUID().toString();
        String key = "k-" + order;
        CompletableFuture<HttpResponse<Order>> first = CompletableFuture.supplyAsync(() -> post("/s23/takeover", key, order, Map.of()));
        TimeUnit.MILLISECONDS.sleep(1_100);
        HttpResponse<Order> second = post("/s23/takeover", key, order, Map.of());
        for (int i = 0; i < 20 && second.code() == 409; i++) { // until the cut-off holder's lease has run out
            TimeUnit.MILLISECONDS.sleep(50);
            second = post("/s23/takeover", key, order, Map.of());
        }
        assertThat(second.code()).isEqualTo(201);
        assertThat(second.body().charge()).isEqualTo("charge-" + order + "-1");
        assertThat(api.runs("charge:" + order)).isEqualTo(1);
        // the first holder wakes up after the takeover: its ship work runs (the effect the contract
        // says may repeat: it ran, but its record is refused) and its request is answered 409
        HttpResponse<Order> late = first.get(10, TimeUnit.SECONDS);
        assertThat(late.code()).isEqualTo(409);
        assertThat(post("/s23/takeover", key, order, Map.of()).body()).isEqualTo(second.body());
    }

    @Test
    @DisplayName("S23: abandon() and @Idempotent(keepSteps = false) discard the steps: the retry runs every step again")
    void abandonAndNoKeep() {
        String order = UUID.randomUUID().toString();
        assertThat(post("/s23/order", "a-" + order, order, Map.of("X-Fail", "1", "X-Abandon", "true")).code()).isEqualTo(500);
        HttpResponse<Order> retried = post("/s23/order", "a-" + order, order, Map.of("X-Fail", "1"));
        assertThat(retried.code()).isEqualTo(201);
        assertThat(retried.body().charge()).isEqualTo("charge-" + order + "-2");
        assertThat(api.runs("reserve:" + order)).isEqualTo(2);

        String other = UUID.randomUUID().toString();
        assertThat(post("/s23/no-keep", "n-" + other, other, Map.of()).code()).isEqualTo(500);
        assertThat(post("/s23/no-keep", "n-" + other, other, Map.of()).body().charge()).isEqualTo("charge-" + other + "-2");
    }

    @Test
    @DisplayName("S23: a repeat is an error unless meant; an oversized result names the bound and setting and is not recorded")
    void misuse() {
        String order = UUID.randomUUID().toString();
        var response = http.toBlocking().exchange(HttpRequest.POST("/s23/misuse", "{}").header("Idempotency-Key", "m-" + order)
            .header("X-Order", order), Map.class);
        Map<?, ?> body = (Map<?, ?>) response.body();
        assertThat(body.get("first")).isEqualTo("charge-" + order + "-1");
        assertThat(body.get("again")).isEqualTo(body.get("first"));
        assertThat((String) body.get("duplicate")).contains("ran already in this execution").contains(".repeatable()");
        assertThat((String) body.get("tooLarge")).startsWith("TOO_LARGE").contains("2002 bytes").contains("1024")
            .contains("idempotency.step-max-bytes");
        assertThat(body.get("big")).isEqualTo("small now");
        assertThat((String) body.get("blank")).contains("a durable step needs a name");
        assertThat(api.runs("charge:" + order)).isEqualTo(1);
    }

    @Test
    @DisplayName("S23: a store that cannot record a step: 503 idempotency-store-unavailable with Retry-After, never a silent re-run")
    void storeCannotRecord() {
        String order = UUID.randomUUID().toString();
        String key = "d-" + order;
        HttpClientResponseException down = org.junit.jupiter.api.Assertions.assertThrows(HttpClientResponseException.class,
            () -> http.toBlocking().exchange(HttpRequest.POST("/s23/store-down", "{}").header("Idempotency-Key", key)
                .header("X-Order", order).header("X-Down", "true"), String.class));
        assertThat(down.getStatus().getCode()).isEqualTo(503);
        assertThat(down.getResponse().getHeaders().get("Retry-After")).isNotBlank();
        assertThat(down.getResponse().getBody(String.class).orElseThrow()).contains("idempotency-store-unavailable");
        // the key was released: the retry runs the step, whose first run was never recorded
        HttpResponse<Order> retried = post("/s23/store-down", key, order, Map.of());
        assertThat(retried.code()).isEqualTo(201);
        assertThat(retried.body().charge()).isEqualTo("charge-" + order + "-2");
    }

    @Test
    @DisplayName("S23/S17: the blocking form on the request's event loop refuses before running its work, and says what to use")
    void blockingFormOnTheEventLoop() {
        String order = UUID.randomUUID().toString();
        Map<?, ?> body = http.toBlocking().retrieve(HttpRequest.POST("/s23/on-loop", "{}")
            .header("Idempotency-Key", "l-" + order).header("X-Order", order), Map.class);
        assertThat((String) body.get("error")).contains("would block an event loop").contains("stepAsync");
        assertThat(api.runs("charge:" + order)).isZero();
    }

    @Test
    @DisplayName("S23: step(...) outside an operation, or on an operation not in scope, says what to do")
    void outsideAnOperation() {
        assertThatThrownBy(IdempotentOperation::required).isInstanceOf(IllegalStateException.class)
            .hasMessageContaining("no idempotent operation is in scope");
        IdempotentOperation detached = new IdempotentOperation("k", "principal:a POST /x", "0".repeat(64));
        assertThatThrownBy(() -> detached.step("charge", String.class, () -> "x"))
            .isInstanceOf(IllegalStateException.class).hasMessageContaining("durable steps run only inside an execution");
        assertThat(detached.stepAsync("charge", String.class, () -> CompletableFuture.completedFuture("x")))
            .isCompletedExceptionally();
        assertThatThrownBy(() -> detached.step("x".repeat(201), String.class))
            .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("at most 200");
        assertThat("charge".getBytes(StandardCharsets.UTF_8)).isNotEmpty();
    }
}
