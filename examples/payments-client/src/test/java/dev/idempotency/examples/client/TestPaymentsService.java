package dev.idempotency.examples.client;

import dev.idempotency.server.Idempotent;
import io.micronaut.context.ApplicationContext;
import io.micronaut.context.annotation.Requires;
import io.micronaut.http.HttpResponse;
import io.micronaut.http.HttpStatus;
import io.micronaut.http.annotation.Body;
import io.micronaut.http.annotation.Controller;
import io.micronaut.http.annotation.Get;
import io.micronaut.http.annotation.Header;
import io.micronaut.http.annotation.PathVariable;
import io.micronaut.http.annotation.Post;
import io.micronaut.runtime.server.EmbeddedServer;
import io.micronaut.scheduling.TaskExecutors;
import io.micronaut.scheduling.annotation.ExecuteOn;
import io.micronaut.serde.annotation.Serdeable;
import jakarta.inject.Singleton;

import java.net.URI;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.Set;
import java.util.UUID;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicLong;

/**
 * A stand-in for the payments example (same routes, statuses and JSON members the demo uses),
 * under the real Idempotency-Key filter with its in-memory store, on a real Netty server on a
 * free port. The example module itself is not a dependency: `-am` would then put it in the
 * reactor of the demo's one-command run, and its exec:java (which starts the service and never
 * returns) would run before the demo's.
 *
 * <p>Like the real service it counts side effects: one per successful create, capture and
 * refund, none for a replay (the filter answers replays without calling the handler).
 */
final class TestPaymentsService implements AutoCloseable {

    static final String SPEC = "PaymentsClientDemoTest";

    private final EmbeddedServer server;

    private TestPaymentsService(EmbeddedServer server) {
        this.server = server;
    }

    static TestPaymentsService start() {
        EmbeddedServer server = ApplicationContext.run(EmbeddedServer.class,
            Map.of("micronaut.server.port", -1, "spec.name", SPEC, "micronaut.server.host", "127.0.0.1"));
        return new TestPaymentsService(server);
    }

    URI uri() {
        return URI.create("http://127.0.0.1:" + server.getPort());
    }

    Ledger ledger() {
        return server.getApplicationContext().getBean(Ledger.class);
    }

    void stop() {
        if (server.isRunning()) {
            server.stop();
        }
    }

    @Override
    public void close() {
        stop();
    }

    /** What the handlers really did. */
    @Singleton
    @Requires(property = "spec.name", value = SPEC)
    static final class Ledger {
        final Map<String, AtomicLong> sideEffects = new ConcurrentHashMap<>();
        final AtomicLong executions = new AtomicLong();
        final Set<String> keysExecuted = ConcurrentHashMap.newKeySet();
        final AtomicLong keysExecutedTwice = new AtomicLong();

        void executed(String key) {
            executions.incrementAndGet();
            if (!keysExecuted.add(key)) {
                keysExecutedTwice.incrementAndGet();
            }
        }
        final Map<String, Payment> payments = new ConcurrentHashMap<>();

        void effect(String operation) {
            sideEffects.computeIfAbsent(operation, k -> new AtomicLong()).incrementAndGet();
        }

        long total() {
            return sideEffects.values().stream().mapToLong(AtomicLong::get).sum();
        }
    }

    @Serdeable
    record Payment(String id, String status, long amount, String currency, long amountCaptured, long amountRefunded) {
    }

    @Serdeable
    record Refund(String id, String paymentId, long amount) {
    }

    @Serdeable
    record Problem(String type, String title, int status, String detail, String code) {
    }

    @Serdeable
    record Stats(long sideEffects, Map<String, Long> byOperation, long handlerExecutions) {
    }

    @Controller("/payments")
    @ExecuteOn(TaskExecutors.BLOCKING)
    @Requires(property = "spec.name", value = SPEC)
    static final class PaymentsController {
        private final Ledger ledger;

        PaymentsController(Ledger ledger) {
            this.ledger = ledger;
        }

        @Post
        @Idempotent
        synchronized HttpResponse<?> create(@Body Map<String, Object> body, @Header("Idempotency-Key") String key) {
            ledger.executed(key);
            long amount = ((Number) body.get("amount")).longValue();
            Payment p = new Payment("pay_" + UUID.randomUUID().toString().replace("-", "").substring(0, 24),
                "AUTHORIZED", amount, (String) body.get("currency"), 0, 0);
            ledger.payments.put(p.id(), p);
            ledger.effect("create");
            return HttpResponse.created(p, URI.create("/payments/" + p.id()));
        }

        @Post("/{id}/capture")
        @Idempotent
        synchronized HttpResponse<?> capture(@PathVariable String id, @Body Map<String, Object> body,
                                         @Header("Idempotency-Key") String key) {
            ledger.executed(key);
            Payment p = ledger.payments.get(id);
            if (p == null) {
                return problem(404, "payment-not-found");
            }
            if (p.amountCaptured() > 0) {
                return problem(409, "payment-already-captured");
            }
            Payment captured = new Payment(id, "CAPTURED", p.amount(), p.currency(), p.amount(), 0);
            ledger.payments.put(id, captured);
            ledger.effect("capture");
            return HttpResponse.ok(captured);
        }

        @Post("/{id}/refunds")
        @Idempotent
        synchronized HttpResponse<?> refund(@PathVariable String id, @Body Map<String, Object> body,
                                         @Header("Idempotency-Key") String key) {
            ledger.executed(key);
            Payment p = ledger.payments.get(id);
            if (p == null) {
                return problem(404, "payment-not-found");
            }
            long amount = ((Number) body.get("amount")).longValue();
            if (amount > p.amountCaptured() - p.amountRefunded()) {
                return problem(422, "refund-exceeds-captured");
            }
            long refunded = p.amountRefunded() + amount;
            ledger.payments.put(id, new Payment(id, refunded == p.amountCaptured() ? "REFUNDED" : "PARTIALLY_REFUNDED",
                p.amount(), p.currency(), p.amountCaptured(), refunded));
            ledger.effect("refund");
            Refund r = new Refund("re_" + UUID.randomUUID().toString().replace("-", "").substring(0, 24), id, amount);
            return HttpResponse.created(r, URI.create("/payments/" + id + "/refunds/" + r.id()));
        }

        private static HttpResponse<?> problem(int status, String code) {
            return HttpResponse.status(HttpStatus.valueOf(status)).contentType("application/problem+json")
                .body(new Problem("https://example.com/payments-service/problems#" + code, code, status, code, code));
        }
    }

    @Controller("/stats")
    @Requires(property = "spec.name", value = SPEC)
    static final class StatsController {
        private final Ledger ledger;

        StatsController(Ledger ledger) {
            this.ledger = ledger;
        }

        @Get
        Stats stats() {
            Map<String, Long> by = new LinkedHashMap<>();
            for (String op : new String[] {"create", "capture", "refund", "update"}) {
                AtomicLong n = ledger.sideEffects.get(op);
                by.put(op, n == null ? 0 : n.get());
            }
            return new Stats(ledger.total(), by, ledger.executions.get());
        }
    }
}
