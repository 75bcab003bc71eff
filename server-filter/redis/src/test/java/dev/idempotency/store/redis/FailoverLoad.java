package dev.idempotency.store.redis;

import dev.idempotency.testsupport.Http;
import dev.idempotency.testsupport.RedisServerProcess;

import java.util.ArrayList;
import java.util.List;
import java.util.UUID;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * Callers that keep sending new keys to one {@link TestApi} path while a store fails over, each
 * retrying its key on 503 (the store is away: the acquire failed closed) and 409 (the key's first
 * attempt is still settling, its completion retried on the new primary) until it is answered 200.
 * With one execution per key, the path's executions equal the keys answered.
 */
final class FailoverLoad implements AutoCloseable {

    private final AtomicBoolean stop = new AtomicBoolean();
    private final AtomicInteger answered = new AtomicInteger();
    private final AtomicInteger refused = new AtomicInteger();
    private final List<CompletableFuture<Void>> callers = new ArrayList<>();

    FailoverLoad(Http http, String path, int callers) {
        for (int c = 0; c < callers; c++) {
            this.callers.add(CompletableFuture.runAsync(() -> {
                while (!stop.get()) {
                    answer(http, path, "\"" + UUID.randomUUID() + "\"", refused);
                    answered.incrementAndGet();
                }
            }));
        }
    }

    /**
     * Sends {@code key} until it is answered 200 (at most 30 s), retrying 503 and 409 as a client
     * does; a store with replicas to wait for may refuse a write while a replica is slow.
     *
     * @return the 200 response
     */
    static java.net.http.HttpResponse<byte[]> answer(Http http, String path, String key, AtomicInteger refused) {
        long giveUp = System.nanoTime() + TimeUnit.SECONDS.toNanos(30);
        java.net.http.HttpResponse<byte[]> response;
        while (((response = http.postJson(path, key, "{}")).statusCode() == 503 || response.statusCode() == 409)
            && System.nanoTime() < giveUp) {
            refused.incrementAndGet();
            RedisServerProcess.sleep(20);
        }
        assertThat(response.statusCode()).as("key %s", key).isEqualTo(200);
        return response;
    }

    /** @return the keys answered 200 so far */
    int answered() {
        return answered.get();
    }

    /** Waits (up to 20 s) until {@code more} keys more than now were answered: the store serves again. */
    void awaitServed(int more) {
        int target = answered.get() + more;
        long until = System.nanoTime() + TimeUnit.SECONDS.toNanos(20);
        while (answered.get() < target && System.nanoTime() < until) {
            RedisServerProcess.sleep(20);
        }
        assertThat(answered.get()).as("keys answered after the failover").isGreaterThanOrEqualTo(target);
    }

    /** Stops the callers and waits for them; a caller's failed assertion fails this. */
    @Override
    public void close() throws Exception {
        stop.set(true);
        CompletableFuture.allOf(callers.toArray(CompletableFuture[]::new)).get(60, TimeUnit.SECONDS);
    }
}
