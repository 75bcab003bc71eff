package dev.idempotency.client;

import dev.idempotency.client.ClientTestApi.NewPayment;
import dev.idempotency.client.ClientTestApi.Payment;
import dev.idempotency.server.Idempotent;
import io.micronaut.context.annotation.Requires;
import io.micronaut.http.HttpResponse;
import io.micronaut.http.HttpStatus;
import io.micronaut.http.annotation.Body;
import io.micronaut.http.annotation.Controller;
import io.micronaut.http.annotation.Header;
import io.micronaut.http.annotation.PathVariable;
import io.micronaut.http.annotation.Post;
import io.micronaut.scheduling.TaskExecutors;
import io.micronaut.scheduling.annotation.ExecuteOn;
import io.micronaut.http.annotation.RequestFilter;
import io.micronaut.http.annotation.ServerFilter;
import io.micronaut.http.HttpRequest;

import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;

/** The server side of the declarative tests, under the real server filter: counts side effects and records the keys it saw. */
@Controller("/d")
@ExecuteOn(TaskExecutors.BLOCKING)
@Requires(property = "spec.name", value = "DeclarativeClientIntegrationTest")
class DeclarativeTestApi {

    final List<String> keysSeen = new CopyOnWriteArrayList<>();
    final List<NewPayment> bodiesSeen = new CopyOnWriteArrayList<>();
    final Map<String, AtomicInteger> callsPerKey = new ConcurrentHashMap<>();
    final Map<String, AtomicInteger> effects = new ConcurrentHashMap<>();
    volatile CountDownLatch gate = new CountDownLatch(0);
    volatile CountDownLatch entered = new CountDownLatch(0);

    /**
     * Records the Idempotency-Key of EVERY request that reaches the server under /d/trap, before
     * the idempotency filter (a replay never reaches the handler, so the handler alone cannot
     * show the key of a replayed attempt).
     */
    @ServerFilter("/d/trap/**")
    @Requires(property = "spec.name", value = "DeclarativeClientIntegrationTest")
    static final class KeysAtTheEdge implements io.micronaut.core.order.Ordered {
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

    int effects(String route) {
        return effects.computeIfAbsent(route, r -> new AtomicInteger()).get();
    }

    private int effect(String route) {
        return effects.computeIfAbsent(route, r -> new AtomicInteger()).incrementAndGet();
    }

    /** Answers 503 {@code failures} times per key (5xx releases the key), then creates the payment. */
    @Post("/flaky/{failures}")
    @Idempotent
    HttpResponse<?> flaky(@PathVariable int failures, @Header("Idempotency-Key") String key, @Body NewPayment body) {
        keysSeen.add(key);
        int call = callsPerKey.computeIfAbsent(key, k -> new AtomicInteger()).incrementAndGet();
        if (call <= failures) {
            return HttpResponse.status(HttpStatus.SERVICE_UNAVAILABLE).body(Map.of("error", "try again"));
        }
        int n = effect("flaky");
        return HttpResponse.created(new Payment("pay_" + n, body.amount(), body.currency(), n));
    }

    @Post("/payments")
    @Idempotent
    HttpResponse<Payment> create(@Header("Idempotency-Key") String key, @Body NewPayment body) {
        keysSeen.add(key);
        bodiesSeen.add(body);
        int n = effect("payments");
        return HttpResponse.created(new Payment("pay_" + n, body.amount(), body.currency(), n));
    }

    /** One handler behind two paths: /d/trap/naive (naive key filter) and /d/trap/annotated (@IdempotentCall). */
    @Post("/trap/{variant}")
    @Idempotent
    HttpResponse<Payment> trap(@PathVariable String variant, @Header("Idempotency-Key") String key, @Body NewPayment body) {
        keysSeen.add(key);
        int n = effect("trap-" + variant);
        return HttpResponse.created(new Payment("pay_" + n, body.amount(), body.currency(), n));
    }

    @Post("/slow")
    @Idempotent
    Map<String, Object> slow(@Header("Idempotency-Key") String key, @Body NewPayment body) throws InterruptedException {
        keysSeen.add(key);
        int n = effect("slow");
        entered.countDown();
        if (!gate.await(30, TimeUnit.SECONDS)) {
            throw new IllegalStateException("gate never opened");
        }
        return Map.of("execution", n);
    }

    @Post("/bad-request")
    @Idempotent
    HttpResponse<?> badRequest(@Body NewPayment body) {
        effect("bad-request");
        return HttpResponse.badRequest(Map.of("error", "amount too small"));
    }
}
