package dev.idempotency.client;

import dev.idempotency.server.Idempotent;
import io.micronaut.context.annotation.Requires;
import io.micronaut.core.type.Argument;
import io.micronaut.http.HttpRequest;
import io.micronaut.http.HttpResponse;
import io.micronaut.http.HttpStatus;
import io.micronaut.http.annotation.Body;
import io.micronaut.http.annotation.Controller;
import io.micronaut.http.annotation.Header;
import io.micronaut.http.annotation.Post;
import io.micronaut.http.annotation.RequestFilter;
import io.micronaut.http.annotation.ServerFilter;
import io.micronaut.http.client.annotation.Client;
import io.micronaut.scheduling.TaskExecutors;
import io.micronaut.scheduling.annotation.ExecuteOn;
import io.micronaut.serde.annotation.Serdeable;
import jakarta.inject.Named;

import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.atomic.AtomicInteger;

/**
 * The two services of the C11 tests in one server, both under the real filter: a card gateway
 * that counts its charges, and a payments API whose handlers charge through the gateway with the
 * client SDK and then fail their first executions, so that each operation runs again.
 */
final class DerivedKeysApi {

    private DerivedKeysApi() {
    }

    @Serdeable
    record Order(String order, long amount) {
    }

    @Serdeable
    record Charge(String charge, String order, long amount) {
    }

    /** What the payments handler answers: the gateway's charges and whether each was a replay. */
    @Serdeable
    record Paid(String order, List<String> charges, List<Boolean> replayed, List<String> keys) {
    }

    /** The card gateway: one charge per request it runs; replays never reach it. */
    @Controller("/c11/gateway")
    @Requires(property = "spec.name", value = "DerivedKeysTest")
    static final class Gateway {
        final AtomicInteger charges = new AtomicInteger();
        final Map<String, AtomicInteger> chargesPerOrder = new ConcurrentHashMap<>();

        @Post("/charges")
        @Idempotent
        Charge charge(@Body Order order) {
            int n = charges.incrementAndGet();
            chargesPerOrder.computeIfAbsent(order.order(), o -> new AtomicInteger()).incrementAndGet();
            return new Charge("ch_" + n, order.order(), order.amount());
        }

        int charges(String order) {
            AtomicInteger n = chargesPerOrder.get(order);
            return n == null ? 0 : n.get();
        }
    }

    /** Every key that reaches the gateway, before the filter answers (a replay never reaches the handler). */
    @ServerFilter("/c11/gateway/**")
    @Requires(property = "spec.name", value = "DerivedKeysTest")
    static final class GatewayEdge implements io.micronaut.core.order.Ordered {
        final List<String> keys = new CopyOnWriteArrayList<>();

        @RequestFilter
        public void record(HttpRequest<?> request) {
            keys.add(request.getHeaders().get("Idempotency-Key"));
        }

        @Override
        public int getOrder() {
            return HIGHEST_PRECEDENCE;
        }
    }

    @Client("/")
    @Requires(property = "spec.name", value = "DerivedKeysTest")
    interface GatewayClient {
        @Post("/c11/gateway/charges")
        @IdempotentCall("c11")
        HttpResponse<Charge> charge(@Body Order order);

        @Post("/c11/gateway/charges")
        @IdempotentCall(value = "c11", step = "charge-card")
        HttpResponse<Charge> chargeCard(@Body Order order);

        @Post("/c11/gateway/charges")
        @IdempotentCall("c11")
        CompletableFuture<HttpResponse<Charge>> chargeLater(@Body Order order);
    }

    /**
     * The payments API. Each handler charges, then answers 500 while the operation has run fewer
     * than {@code fail} times (the 5xx releases the key, CONTRACT S14), so the retry runs it again.
     */
    @Controller("/c11/payments")
    @Requires(property = "spec.name", value = "DerivedKeysTest")
    static final class Payments {
        private static final Argument<Charge> CHARGE = Argument.of(Charge.class);

        final Map<String, AtomicInteger> executions = new ConcurrentHashMap<>();
        private final IdempotentClient client;
        private final IdempotentClient underived;
        private final GatewayClient gateway;

        private final PartitionedRenewals store;

        Payments(@Named("c11") IdempotentClient client, @Named("c11-underived") IdempotentClient underived,
                 GatewayClient gateway, PartitionedRenewals store) {
            this.store = store;
            this.client = client;
            this.underived = underived;
            this.gateway = gateway;
        }

        @Post("/programmatic")
        @Idempotent
        @ExecuteOn(TaskExecutors.BLOCKING)
        HttpResponse<Paid> programmatic(@Header("Idempotency-Key") String key, @Header("X-Fail") int fail,
                                        @Body Order order) {
            IdempotentResult<Charge> charged = client.execute(IdempotentRequest.post("/c11/gateway/charges", order), CHARGE);
            return answer(key, fail, order, List.of(charged));
        }

        @Post("/two-charges")
        @Idempotent
        @ExecuteOn(TaskExecutors.BLOCKING)
        HttpResponse<Paid> twoCharges(@Header("Idempotency-Key") String key, @Header("X-Fail") int fail,
                                      @Body Order order) {
            // two calls of one method and path: the default steps are POST /c11/gateway/charges#1 and #2
            IdempotentResult<Charge> first = client.execute(IdempotentRequest.post("/c11/gateway/charges", order), CHARGE);
            IdempotentResult<Charge> second = client.execute(IdempotentRequest.post("/c11/gateway/charges", order), CHARGE);
            return answer(key, fail, order, List.of(first, second));
        }

        @Post("/named")
        @Idempotent
        @ExecuteOn(TaskExecutors.BLOCKING)
        HttpResponse<Paid> named(@Header("Idempotency-Key") String key, @Header("X-Fail") int fail, @Body Order order) {
            IdempotentResult<Charge> programmatic = client.execute(
                IdempotentRequest.post("/c11/gateway/charges", order).step("charge-card"), CHARGE);
            return answer(key, fail, order, List.of(programmatic));
        }

        @Post("/explicit")
        @Idempotent
        @ExecuteOn(TaskExecutors.BLOCKING)
        HttpResponse<Paid> explicit(@Header("Idempotency-Key") String key, @Header("X-Fail") int fail,
                                    @Header("X-Downstream-Key") String downstream, @Body Order order) {
            IdempotentResult<Charge> charged = client.execute(
                IdempotentRequest.post("/c11/gateway/charges", order).key(downstream), CHARGE);
            return answer(key, fail, order, List.of(charged));
        }

        @Post("/underived")
        @Idempotent
        @ExecuteOn(TaskExecutors.BLOCKING)
        HttpResponse<Paid> underived(@Header("Idempotency-Key") String key, @Header("X-Fail") int fail,
                                     @Body Order order) {
            IdempotentResult<Charge> charged = underived.execute(IdempotentRequest.post("/c11/gateway/charges", order), CHARGE);
            return answer(key, fail, order, List.of(charged));
        }

        @Post("/declarative")
        @Idempotent
        @ExecuteOn(TaskExecutors.BLOCKING)
        HttpResponse<Paid> declarative(@Header("Idempotency-Key") String key, @Header("X-Fail") int fail,
                                       @Body Order order) {
            HttpResponse<Charge> charged = gateway.charge(order);
            IdempotentResult<?> outcome = IdempotentCalls.lastResult().orElseThrow();
            return answer(key, fail, order, charged.body(), outcome);
        }

        @Post("/declarative-named")
        @Idempotent
        @ExecuteOn(TaskExecutors.BLOCKING)
        HttpResponse<Paid> declarativeNamed(@Header("Idempotency-Key") String key, @Header("X-Fail") int fail,
                                            @Body Order order) {
            HttpResponse<Charge> charged = gateway.chargeCard(order);
            IdempotentResult<?> outcome = IdempotentCalls.lastResult().orElseThrow();
            return answer(key, fail, order, charged.body(), outcome);
        }

        /** Non-blocking: the route runs on the event loop and charges through the async client. */
        @Post("/async")
        @Idempotent
        CompletableFuture<HttpResponse<Paid>> async(@Header("Idempotency-Key") String key, @Header("X-Fail") int fail,
                                                    @Body Order order) {
            return client.executeAsync(IdempotentRequest.post("/c11/gateway/charges", order), CHARGE)
                .thenApply(charged -> answer(key, fail, order, List.of(charged)));
        }

        /** Non-blocking, declarative: the key is chosen on the event loop, when the method is called. */
        @Post("/declarative-async")
        @Idempotent
        CompletableFuture<HttpResponse<Paid>> declarativeAsync(@Header("Idempotency-Key") String key,
                                                               @Header("X-Fail") int fail, @Body Order order) {
            return gateway.chargeLater(order).thenApply(charged -> {
                boolean replayed = "true".equals(charged.getHeaders().get("Idempotent-Replayed"));
                Charge c = charged.body();
                return answer(key, fail, order, List.of(c.charge()), List.of(replayed), List.of("?"));
            });
        }

        /**
         * A handler whose instance is cut off from the store after charging, so that its
         * one-second lease runs out: the retry takes the lease over (CONTRACT S12) and runs the
         * handler again while the first execution still runs; the first one's completion is fenced.
         */
        @Post("/takeover")
        @Idempotent(lease = "1s")
        @ExecuteOn(TaskExecutors.BLOCKING)
        HttpResponse<Paid> takeover(@Header("Idempotency-Key") String key, @Body Order order) throws InterruptedException {
            IdempotentResult<Charge> charged = client.execute(IdempotentRequest.post("/c11/gateway/charges", order), CHARGE);
            if (executions.computeIfAbsent(key, k -> new AtomicInteger()).incrementAndGet() == 1) {
                // this instance is cut off from the store after the charge: its lease runs out
                store.cutOff.add(dev.idempotency.server.IdempotentOperation.current().orElseThrow().recordId());
                Thread.sleep(1_600);
            }
            return paid(order, List.of(charged));
        }

        private HttpResponse<Paid> answer(String key, int fail, Order order, Charge charge, IdempotentResult<?> outcome) {
            return answer(key, fail, order, List.of(charge.charge()), List.of(outcome.replayed()), List.of(outcome.key()));
        }

        private HttpResponse<Paid> answer(String key, int fail, Order order, List<IdempotentResult<Charge>> charged) {
            HttpResponse<Paid> ok = paid(order, charged);
            return fail(key, fail) ? HttpResponse.serverError(ok.body()) : ok;
        }

        private HttpResponse<Paid> answer(String key, int fail, Order order, List<String> charges, List<Boolean> replayed,
                                          List<String> keys) {
            Paid paid = new Paid(order.order(), charges, replayed, keys);
            return fail(key, fail) ? HttpResponse.serverError(paid) : HttpResponse.created(paid);
        }

        private boolean fail(String key, int fail) {
            return executions.computeIfAbsent(key, k -> new AtomicInteger()).incrementAndGet() <= fail;
        }

        private static HttpResponse<Paid> paid(Order order, List<IdempotentResult<Charge>> charged) {
            return HttpResponse.status(HttpStatus.CREATED).body(new Paid(order.order(),
                charged.stream().map(r -> r.body().orElseThrow().charge()).toList(),
                charged.stream().map(IdempotentResult::replayed).toList(),
                charged.stream().map(IdempotentResult::key).toList()));
        }
    }
}
