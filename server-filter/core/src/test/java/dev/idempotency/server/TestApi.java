package dev.idempotency.server;

import io.micronaut.context.annotation.Requires;
import io.micronaut.http.HttpResponse;
import io.micronaut.http.HttpStatus;
import io.micronaut.http.MediaType;
import io.micronaut.http.annotation.Body;
import io.micronaut.http.annotation.Controller;
import io.micronaut.http.annotation.Get;
import io.micronaut.http.annotation.Patch;
import io.micronaut.http.annotation.PathVariable;
import io.micronaut.http.annotation.Post;
import io.micronaut.http.annotation.Put;
import io.micronaut.http.annotation.QueryValue;
import io.micronaut.http.server.types.files.StreamedFile;
import io.micronaut.scheduling.TaskExecutors;
import io.micronaut.scheduling.annotation.ExecuteOn;
import io.micronaut.serde.annotation.Serdeable;

import java.io.ByteArrayInputStream;
import java.net.URI;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;

/**
 * Routes the filter tests call. Every handler counts its executions, so a test can tell a
 * replay (count unchanged) from a second execution.
 */
@Controller("/t")
@ExecuteOn(TaskExecutors.BLOCKING)
@Requires(property = "spec.name", value = "IdempotencyFilterTest")
class TestApi {

    final Map<String, AtomicInteger> calls = new ConcurrentHashMap<>();
    volatile CountDownLatch gate = new CountDownLatch(0);
    volatile CountDownLatch entered = new CountDownLatch(0);

    int calls(String route) {
        return calls.computeIfAbsent(route, r -> new AtomicInteger()).get();
    }

    private int count(String route) {
        return calls.computeIfAbsent(route, r -> new AtomicInteger()).incrementAndGet();
    }

    @Serdeable
    record Payment(String id, long amount, String currency, int execution) {
    }

    @Serdeable
    record NewPayment(long amount, String currency) {
    }

    @Post("/payments")
    @Idempotent
    HttpResponse<Payment> create(@Body NewPayment request) {
        int n = count("payments");
        Payment p = new Payment("pay_" + n, request.amount(), request.currency(), n);
        return HttpResponse.created(p, URI.create("/t/payments/pay_" + n))
            .header("ETag", "\"v" + n + "\"")
            .header("Set-Cookie", "session=secret-" + n)
            .header("X-Not-Stored", "n" + n);
    }

    @Patch("/payments/{id}")
    @Idempotent
    Map<String, Object> patch(@PathVariable String id, @Body Map<String, Object> changes) {
        return Map.of("id", id, "execution", count("patch"));
    }

    @Post(value = "/text", processes = MediaType.TEXT_PLAIN)
    @Idempotent
    String text(@Body String body) {
        return "text \u00e9 " + count("text") + " " + body;
    }

    @Post(value = "/binary", consumes = MediaType.APPLICATION_OCTET_STREAM, produces = MediaType.APPLICATION_OCTET_STREAM)
    @Idempotent
    byte[] binary(@Body byte[] body) {
        int n = count("binary");
        byte[] out = new byte[256 + body.length];
        for (int i = 0; i < 256; i++) {
            out[i] = (byte) (i + n);
        }
        System.arraycopy(body, 0, out, 256, body.length);
        return out;
    }

    @Post("/query")
    @Idempotent
    Map<String, Object> query(@QueryValue(defaultValue = "") String a, @Body Map<String, Object> body) {
        return Map.of("execution", count("query"));
    }

    @Post("/status/{code}")
    @Idempotent
    HttpResponse<Map<String, Object>> status(@PathVariable int code) {
        return HttpResponse.<Map<String, Object>>status(HttpStatus.valueOf(code))
            .body(Map.of("execution", count("status" + code)));
    }

    @Post("/tenant-orders")
    @Idempotent(fingerprintHeaders = "X-Tenant")
    Map<String, Object> tenantOrder(@Body Map<String, Object> body) {
        return Map.of("execution", count("tenant-orders"));
    }

    /** Thrown by {@code /declined}, answered 402 by {@link DeclinedHandler}: a handled exception. */
    static final class PaymentDeclined extends RuntimeException {
        PaymentDeclined() {
            super("card declined");
        }
    }

    @Post("/declined")
    @Idempotent
    Map<String, Object> declined() {
        count("declined");
        throw new PaymentDeclined();
    }

    /** A body whose encoding fails: the handler ran, but its response cannot be written. */
    @Serdeable
    record Unwritable(String value) {
        @Override
        public String value() {
            throw new IllegalStateException("this body cannot be encoded");
        }
    }

    @Post("/unwritable")
    @Idempotent
    Unwritable unwritable() {
        count("unwritable");
        return new Unwritable("x");
    }

    @Post("/boom")
    @Idempotent
    Map<String, Object> boom() {
        count("boom");
        throw new IllegalStateException("handler failed");
    }

    @Post("/slow")
    @Idempotent
    Map<String, Object> slow(@Body Map<String, Object> body) throws InterruptedException {
        int n = count("slow");
        entered.countDown();
        if (!gate.await(30, TimeUnit.SECONDS)) {
            throw new IllegalStateException("gate never opened");
        }
        return Map.of("execution", n);
    }

    @Post("/slow-wait")
    @Idempotent(inFlightWait = "10s")
    Map<String, Object> slowWait(@Body Map<String, Object> body) throws InterruptedException {
        int n = count("slow-wait");
        entered.countDown();
        if (!gate.await(30, TimeUnit.SECONDS)) {
            throw new IllegalStateException("gate never opened");
        }
        return Map.of("execution", n);
    }

    @Post("/big")
    @Idempotent
    String big() {
        int n = count("big");
        return "x".repeat(8192) + n;
    }

    @Post(value = "/stream", produces = MediaType.TEXT_PLAIN)
    @Idempotent
    StreamedFile stream() {
        int n = count("stream");
        return new StreamedFile(new ByteArrayInputStream(("streamed " + n).getBytes()), MediaType.TEXT_PLAIN_TYPE);
    }

    @Post("/optional")
    @Idempotent(required = false)
    Map<String, Object> optional() {
        return Map.of("execution", count("optional"));
    }

    @Post("/sneaky")
    @Idempotent(required = false)
    HttpResponse<Map<String, Object>> sneaky() {
        return HttpResponse.ok(Map.<String, Object>of("execution", count("sneaky"))).header("Idempotent-Replayed", "true");
    }

    @Post("/unannotated")
    Map<String, Object> unannotated() {
        return Map.of("execution", count("unannotated"));
    }

    @Get("/get")
    Map<String, Object> get() {
        return Map.of("execution", count("get"));
    }

    @Put("/put")
    Map<String, Object> put(@Body Map<String, Object> body) {
        return Map.of("execution", count("put"));
    }

    @Post("/ignored")
    @Idempotent(ignoreJsonPointers = "/meta/sent_at")
    Map<String, Object> ignored(@Body Map<String, Object> body) {
        return Map.of("execution", count("ignored"));
    }
}
