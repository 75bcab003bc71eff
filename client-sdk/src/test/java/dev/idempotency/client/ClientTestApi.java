package dev.idempotency.client;

import dev.idempotency.server.Idempotent;
import io.micronaut.context.annotation.Requires;
import io.micronaut.http.HttpHeaders;
import io.micronaut.http.HttpResponse;
import io.micronaut.http.HttpStatus;
import io.micronaut.http.MediaType;
import io.micronaut.http.annotation.Body;
import io.micronaut.http.annotation.Controller;
import io.micronaut.http.annotation.Header;
import io.micronaut.http.annotation.PathVariable;
import io.micronaut.http.annotation.Post;
import io.micronaut.scheduling.TaskExecutors;
import io.micronaut.scheduling.annotation.ExecuteOn;
import io.micronaut.serde.annotation.Serdeable;

import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;

/** Routes under the real server filter; every handler counts its side effects and records the keys it saw. */
@Controller("/c")
@ExecuteOn(TaskExecutors.BLOCKING)
@Requires(property = "spec.name", value = "IdempotentClientIntegrationTest")
class ClientTestApi {

    final List<String> keysSeen = new CopyOnWriteArrayList<>();
    final Map<String, AtomicInteger> callsPerKey = new ConcurrentHashMap<>();
    final Map<String, AtomicInteger> effects = new ConcurrentHashMap<>();
    volatile CountDownLatch gate = new CountDownLatch(0);
    volatile CountDownLatch entered = new CountDownLatch(0);

    int effects(String route) {
        return effects.computeIfAbsent(route, r -> new AtomicInteger()).get();
    }

    private int effect(String route) {
        return effects.computeIfAbsent(route, r -> new AtomicInteger()).incrementAndGet();
    }

    @Serdeable
    record Payment(String id, long amount, String currency, int execution) {
    }

    @Serdeable
    record NewPayment(long amount, String currency) {
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
    HttpResponse<Payment> create(@Body NewPayment body) {
        int n = effect("payments");
        return HttpResponse.created(new Payment("pay_" + n, body.amount(), body.currency(), n));
    }

    @Post("/slow")
    @Idempotent
    Map<String, Object> slow(@Body NewPayment body) throws InterruptedException {
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

    /** A business conflict: stored and replayed by the filter, never retried by the client. */
    @Post("/capture")
    @Idempotent
    HttpResponse<?> capture(@Body NewPayment body) {
        effect("capture");
        return HttpResponse.status(HttpStatus.CONFLICT)
            .contentType(MediaType.APPLICATION_JSON_PROBLEM_TYPE)
            .header(HttpHeaders.RETRY_AFTER, "1")
            .body(Map.of("type", "https://example.com/problems#already-captured", "title", "Payment already captured",
                "status", 409, "code", "payment-already-captured"));
    }
}
