package dev.idempotency.benchmarks.load;

import dev.idempotency.testsupport.RedisServerProcess;
import dev.idempotency.testsupport.TcpProxy;
import dev.idempotency.testsupport.TestPostgres;
import io.micronaut.context.ApplicationContext;
import io.micronaut.runtime.server.EmbeddedServer;

import java.io.IOException;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.time.LocalDate;
import java.util.ArrayList;
import java.util.Collections;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.atomic.AtomicBoolean;

/**
 * The outage drill (issue "Outages and hostile bodies"): the echo service with the filter, under
 * a steady load of new keys, loses its store and gets it back, and the drill reports what the
 * callers saw. Redis: a private redis-server this drill starts, killed (SIGKILL) and restarted on
 * the same port. PostgreSQL: the configured (or embedded) server behind a TCP proxy of the drill's
 * own that is cut (every connection reset, new ones refused) and restored.
 *
 * <p>Per store it prints: the 503s during the outage with their latency p50/p99, the seconds from
 * the store's return to the first 2xx, and every answer that was neither 2xx nor 503 (which must
 * be none). A benchmark, not a test: nothing here asserts a time.
 *
 * <pre>benchmarks/load/drill [redis,postgres]</pre> ({@code -Dprop.<setting>=<value>} before {@code -cp} overrides a
 * setting of the service).
 */
public final class OutageDrill {

    private static final int CLIENTS = 16;
    private static final long WARM_MS = 3000;
    private static final long OUTAGE_MS = 5000;
    private static final long AFTER_MS = 4000;

    private record Sample(long sentNanos, long latencyNanos, int status) {
    }

    private OutageDrill() {
    }

    public static void main(String[] args) throws Exception {
        List<String> stores = List.of((args.length > 0 ? args[0] : "redis,postgres").split(","));
        StringBuilder report = new StringBuilder();
        report.append("# Outage drill, ").append(LocalDate.now()).append(", ")
            .append(Runtime.getRuntime().availableProcessors()).append(" CPUs, ").append(CLIENTS)
            .append(" clients sending new keys without pause; outage ").append(OUTAGE_MS / 1000).append(" s\n\n")
            .append("| store | how | requests | 503 during the outage | 503 p50 | 503 p99 | first 2xx after the store is back |"
                + " neither 2xx nor 503 |\n|---|---|---:|---:|---:|---:|---:|---:|\n");
        for (String store : stores) {
            report.append(drill(store.trim())).append('\n');
        }
        System.out.println();
        System.out.println(report);
        Path out = Path.of("benchmarks/load/target/outage-drill.md");
        Files.createDirectories(out.getParent());
        Files.writeString(out, report.toString(), StandardCharsets.UTF_8);
        System.out.println("written to " + out.toAbsolutePath());
        System.exit(0);
    }

    private static String drill(String store) throws Exception {
        Map<String, Object> props = new HashMap<>();
        props.put("micronaut.server.port", -1);
        props.put("idempotency.retention", "2m");
        RedisServerProcess redis = null;
        TcpProxy cut = null;
        String schema = null;
        String how;
        switch (store) {
            case "redis" -> {
                redis = RedisServerProcess.start();
                props.put("idempotency.store.type", "redis");
                props.put("redis.uri", redis.uri());
                how = "redis-server killed (SIGKILL), restarted on its port";
            }
            case "postgres" -> {
                TestPostgres.Server pg = TestPostgres.server();
                schema = TestPostgres.newSchema();
                props.putAll(TestPostgres.properties(pg, schema));
                props.put("datasources.default.connection-timeout", "1000"); // as the docs recommend
                URI jdbc = URI.create(pg.url().substring("jdbc:".length()));
                cut = new TcpProxy(jdbc.getHost(), jdbc.getPort());
                props.put("datasources.default.url", "jdbc:postgresql://127.0.0.1:" + cut.port() + jdbc.getRawPath()
                    + (jdbc.getRawQuery() == null ? "" : "?" + jdbc.getRawQuery()));
                how = "TCP proxy cut (connections reset, new ones refused), then restored";
            }
            default -> throw new IllegalArgumentException("unknown store " + store + "; use redis or postgres");
        }
        // -Dprop.<setting>=<value> overrides a setting of the service, e.g. the pool's connection-timeout
        System.getProperties().forEach((k, v) -> {
            if (k.toString().startsWith("prop.")) {
                props.put(k.toString().substring(5), v);
            }
        });
        try (EmbeddedServer server = ApplicationContext.run(EmbeddedServer.class, props)) {
            URI target = URI.create("http://127.0.0.1:" + server.getPort() + "/idem/echo");
            HttpClient client = HttpClient.newBuilder().connectTimeout(Duration.ofSeconds(5)).build();
            ConcurrentLinkedQueue<Sample> samples = new ConcurrentLinkedQueue<>();
            List<String> odd = new CopyOnWriteArrayList<>();
            AtomicBoolean running = new AtomicBoolean(true);
            List<Thread> threads = new ArrayList<>();
            for (int i = 0; i < CLIENTS; i++) {
                Thread t = new Thread(() -> {
                    while (running.get()) {
                        HttpRequest request = HttpRequest.newBuilder(target).timeout(Duration.ofSeconds(30))
                            .header("Content-Type", "application/json")
                            .header("Idempotency-Key", "\"" + UUID.randomUUID() + "\"")
                            .POST(HttpRequest.BodyPublishers.ofString("{\"drill\":true}")).build();
                        long start = System.nanoTime();
                        int status;
                        try {
                            status = client.send(request, HttpResponse.BodyHandlers.discarding()).statusCode();
                        } catch (IOException e) {
                            status = -1;
                            odd.add(e.toString());
                        } catch (InterruptedException e) {
                            return;
                        }
                        samples.add(new Sample(start, System.nanoTime() - start, status));
                    }
                }, "drill-client-" + i);
                t.setDaemon(true);
                t.start();
                threads.add(t);
            }
            Thread.sleep(WARM_MS);
            long down = System.nanoTime();
            if (redis != null) {
                redis.kill();
            } else {
                cut.stop();
            }
            Thread.sleep(OUTAGE_MS);
            if (redis != null) {
                redis.restart(); // returns once the new redis-server answers
            } else {
                cut.start();
            }
            // the store is back from here: the time to the first 2xx is the filter's and its client's
            long back = System.nanoTime();
            Thread.sleep(AFTER_MS);
            running.set(false);
            for (Thread t : threads) {
                t.join(35_000);
            }
            return row(store, how, new ArrayList<>(samples), down, back, odd);
        } finally {
            if (redis != null) {
                redis.close();
            }
            if (cut != null) {
                cut.close();
            }
            if (schema != null) {
                TestPostgres.dropSchema(schema);
            }
        }
    }

    private static String row(String store, String how, List<Sample> samples, long down, long back, List<String> odd) {
        List<Long> outage503 = new ArrayList<>();
        int neither = 0;
        Map<Integer, Integer> neitherByStatus = new HashMap<>();
        long firstOkAfterBack = Long.MAX_VALUE;
        for (Sample s : samples) {
            boolean ok = s.status >= 200 && s.status < 300;
            if (!ok && s.status != 503) {
                neither++;
                neitherByStatus.merge(s.status, 1, Integer::sum);
            }
            // a 503 of the outage: sent after the store went, answered before it came back
            if (s.status == 503 && s.sentNanos >= down && s.sentNanos + s.latencyNanos <= back) {
                outage503.add(s.latencyNanos);
            }
            if (ok && s.sentNanos >= back) {
                firstOkAfterBack = Math.min(firstOkAfterBack, s.sentNanos + s.latencyNanos);
            }
        }
        Collections.sort(outage503);
        String firstOk = firstOkAfterBack == Long.MAX_VALUE ? "none"
            : String.format("%.2f s", (firstOkAfterBack - back) / 1e9);
        odd.stream().distinct().limit(3).forEach(e -> System.out.println(store + ": client saw " + e));
        return "| " + store + " | " + how + " | " + samples.size() + " | " + outage503.size() + " | "
            + millis(percentile(outage503, 0.50)) + " | " + millis(percentile(outage503, 0.99)) + " | " + firstOk + " | "
            + neither + (neitherByStatus.isEmpty() ? "" : " " + neitherByStatus) + " |";
    }

    private static long percentile(List<Long> sorted, double p) {
        if (sorted.isEmpty()) {
            return -1;
        }
        return sorted.get(Math.min(sorted.size() - 1, (int) Math.ceil(p * sorted.size()) - 1));
    }

    private static String millis(long nanos) {
        return nanos < 0 ? "-" : String.format("%.1f ms", nanos / 1e6);
    }
}
