package dev.idempotency.benchmarks.load;

import dev.idempotency.client.IdempotentClient;
import dev.idempotency.client.IdempotentClientConfig;
import dev.idempotency.client.IdempotentRequest;
import dev.idempotency.testsupport.FaultProxy;
import io.micronaut.http.client.HttpClient;

import java.net.URI;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;

/**
 * The drills' load: workers that each run one {@link DrillController} operation after another
 * through the client SDK (one key per operation, up to 100 attempts within 60 s, {@code Retry-After}
 * honoured up to 1 s) through a {@link FaultProxy} in front of the service (2 % of responses
 * dropped, 2 % of connections reset, seed 42).
 */
final class DrillLoad implements AutoCloseable {

    private final FaultProxy proxy;
    private final HttpClient http;
    private final AtomicBoolean running = new AtomicBoolean(true);
    private final AtomicInteger ok = new AtomicInteger();
    private final AtomicInteger failed = new AtomicInteger();
    private final List<Thread> workers = new ArrayList<>();

    DrillLoad(int servicePort, int workers, String label) throws Exception {
        proxy = FaultProxy.builder().upstream(servicePort).seed(42)
            .dropResponseProbability(0.02).resetProbability(0.02).build().start();
        http = HttpClient.create(URI.create(proxy.baseUrl()).toURL());
        IdempotentClient client = IdempotentClient.create(http, IdempotentClientConfig.custom()
            .maxAttempts(100).baseDelay(Duration.ofMillis(20)).maxDelay(Duration.ofMillis(500))
            .maxRetryAfter(Duration.ofSeconds(1)).deadline(Duration.ofSeconds(60)).budgetEnabled(false).build());
        AtomicLong ids = new AtomicLong();
        for (int i = 0; i < workers; i++) {
            Thread t = new Thread(() -> {
                while (running.get()) {
                    long op = ids.incrementAndGet();
                    try {
                        client.execute(IdempotentRequest.post("/drill/" + op, Map.of("op", op)), String.class);
                        ok.incrementAndGet();
                    } catch (RuntimeException e) {
                        failed.incrementAndGet();
                        System.out.println(label + ": operation " + op + " failed: " + e);
                    }
                }
            }, "drill-worker-" + i);
            t.setDaemon(true);
            t.start();
            this.workers.add(t);
        }
    }

    /** Lets every worker finish the operation it runs (at most its 60 s deadline), then stops. */
    void finish() throws InterruptedException {
        running.set(false);
        for (Thread t : workers) {
            t.join(70_000);
        }
    }

    int succeeded() {
        return ok.get();
    }

    int failed() {
        return failed.get();
    }

    @Override
    public void close() throws Exception {
        running.set(false);
        http.close();
        proxy.close();
    }
}
