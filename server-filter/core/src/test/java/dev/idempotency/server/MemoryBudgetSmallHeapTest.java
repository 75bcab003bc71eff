package dev.idempotency.server;

import dev.idempotency.server.store.memory.InMemoryIdempotencyStore;
import dev.idempotency.testsupport.Http;
import io.micronaut.context.annotation.Property;
import io.micronaut.context.annotation.Requires;
import io.micronaut.http.MediaType;
import io.micronaut.http.annotation.Controller;
import io.micronaut.http.annotation.Post;
import io.micronaut.http.annotation.Produces;
import io.micronaut.runtime.server.EmbeddedServer;
import io.micronaut.test.extensions.junit5.annotation.MicronautTest;
import jakarta.inject.Inject;
import org.junit.jupiter.api.DisplayName;
import org.junit.jupiter.api.Test;

import java.lang.management.ManagementFactory;
import java.net.http.HttpResponse;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.UUID;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * S17: the hostile run of the adoption report, on the default setup (the in-memory store with its
 * default bounds) in a JVM with a small heap (this class runs in a JVM of its own, {@code -Xmx256m},
 * see the parent pom): many new keys on a route that answers 1,000,000 bytes. The store stays
 * within its byte budget, no answer is a 500, nothing runs out of memory, and every handler run
 * happened under a key the store had granted.
 */
@MicronautTest
@Property(name = "spec.name", value = "MemoryBudgetSmallHeapTest")
class MemoryBudgetSmallHeapTest {

    static final int BODY = 1_000_000;

    @Inject
    EmbeddedServer server;
    @Inject
    Big big;
    @Inject
    InMemoryIdempotencyStore store;

    @Controller("/big")
    @Requires(property = "spec.name", value = "MemoryBudgetSmallHeapTest")
    static class Big {
        final AtomicInteger runs = new AtomicInteger();

        @Post
        @Idempotent
        @Produces(MediaType.APPLICATION_OCTET_STREAM)
        byte[] answer() {
            runs.incrementAndGet();
            byte[] body = new byte[BODY];
            java.util.Arrays.fill(body, (byte) 'z');
            return body;
        }
    }

    @Test
    @DisplayName("S17: 600 new keys answering 1 MB each under a 256 MB heap: no 500, no OutOfMemoryError, store within 64 MiB")
    void hostileRun() throws Exception {
        long maxHeap = ManagementFactory.getMemoryMXBean().getHeapMemoryUsage().getMax();
        assertThat(maxHeap).as("this test must run in its small-heap JVM").isLessThanOrEqualTo(300L << 20);
        Http http = new Http(server.getURI());
        Map<Integer, Integer> statuses = new TreeMap<>();
        List<String> keys = java.util.Collections.synchronizedList(new ArrayList<>());
        ExecutorService pool = Executors.newFixedThreadPool(8);
        try {
            List<Future<Integer>> results = new ArrayList<>();
            for (int i = 0; i < 600; i++) {
                results.add(pool.submit(() -> {
                    String key = "\"" + UUID.randomUUID() + "\"";
                    HttpResponse<byte[]> r = http.post("/big", key, "application/json", "{}".getBytes());
                    if (r.statusCode() == 200) {
                        assertThat(r.body()).hasSize(BODY);
                        keys.add(key);
                    }
                    return r.statusCode();
                }));
            }
            for (Future<Integer> f : results) {
                statuses.merge(f.get(120, TimeUnit.SECONDS), 1, Integer::sum);
            }
        } finally {
            pool.shutdownNow();
        }
        assertThat(statuses).as("statuses").containsOnlyKeys(200);
        assertThat(big.runs.get()).as("each new key ran once").isEqualTo(600);
        assertThat(store.bytes()).isLessThanOrEqualTo(InMemoryIdempotencyStore.DEFAULT_MAX_BYTES);
        // the latest records are still replayed byte for byte, and nothing ran again for them
        String latest = keys.get(keys.size() - 1);
        HttpResponse<byte[]> replay = http.post("/big", latest, "application/json", "{}".getBytes());
        assertThat(replay.statusCode()).isEqualTo(200);
        assertThat(replay.headers().firstValue("Idempotent-Replayed")).hasValue("true");
        assertThat(replay.body()).hasSize(BODY);
        assertThat(big.runs.get()).isEqualTo(600);
    }
}
