package dev.idempotency.benchmarks.load;

import dev.idempotency.testsupport.TestPostgres;
import dev.idempotency.testsupport.TestRedis;

import java.net.URI;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.LocalDate;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.locks.LockSupport;

/**
 * Tail latency at a constant request rate (issue "Stores at scale", item 7). A saturated load
 * ({@code wrk}) queues requests, and the queueing hides where a slow request comes from; an
 * open-loop load at half the saturated rate does not. Per store, the echo service ({@link LoadApp})
 * in a JVM of its own: first {@code wrk -t2 -c32} finds the filter's saturated rate of new keys,
 * then requests are sent at half that rate over 32 connections, each at its scheduled time (or
 * once its connection is free, if later), and each one's latency counts from that scheduled time,
 * as wrk2 does (so a stall of the service shows in every request it delayed, not only in the one
 * it held). Rounds alternate the route
 * without the filter and the route under it at the same rate. A benchmark: it asserts nothing.
 *
 * <pre>benchmarks/load/constant-rate [memory,redis,postgres] [seconds per round]</pre>
 */
public final class ConstantRate {

    private static final int ROUNDS = 3;

    private ConstantRate() {
    }

    /** One round's latencies (nanoseconds, sorted) and how many requests failed. */
    private record Round(long[] latencies, long failed) {

        long percentile(double p) {
            return latencies.length == 0 ? 0 : latencies[Math.min(latencies.length - 1,
                (int) Math.ceil(p * latencies.length) - 1)];
        }
    }

    public static void main(String[] args) throws Exception {
        List<String> stores = List.of((args.length > 0 ? args[0] : "memory,redis,postgres").split(","));
        int seconds = args.length > 1 ? Integer.parseInt(args[1]) : 20;
        StringBuilder report = new StringBuilder("# Tail latency at a constant rate, " + LocalDate.now() + ", "
            + Runtime.getRuntime().availableProcessors() + " CPUs; half the filter's saturated new-key rate; "
            + ROUNDS + " rounds of " + seconds + " s per route, alternating; latency from each request's scheduled"
            + " time; medians of the rounds\n\n"
            + "| store | saturated, req/s | rate | route p50 | route p99 | route p99.9 | filter p50 | filter p99 |"
            + " filter p99.9 | p99 ÷ route's | failed |\n|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n");
        Wrk wrk = new Wrk(Files.createTempDirectory("constant-rate-"));
        for (String store : stores) {
            String row = store(store.trim(), wrk, seconds);
            System.out.println(row);
            report.append(row).append('\n');
        }
        System.out.println();
        System.out.println(report);
        Path out = Path.of("benchmarks/load/target/constant-rate.md");
        Files.createDirectories(out.getParent());
        Files.writeString(out, report.toString(), StandardCharsets.UTF_8);
        System.out.println("written to " + out.toAbsolutePath());
        System.exit(0);
    }

    private static String store(String store, Wrk wrk, int seconds) throws Exception {
        Map<String, String> props = new LinkedHashMap<>();
        String runId = UUID.randomUUID().toString().substring(0, 8);
        String schema = null;
        switch (store) {
            case "memory" -> props.put("idempotency.store.redis.enabled", "false");
            case "redis" -> {
                props.put("redis.uri", TestRedis.uri());
                props.put("idempotency.store.redis.enabled", "true");
                props.put("idempotency.store.redis.key-prefix", "rate-" + runId + ":");
                props.put("idempotency.retention", "2m");
            }
            case "postgres" -> {
                TestPostgres.Server pg = TestPostgres.server();
                schema = TestPostgres.newSchema();
                TestPostgres.properties(pg, schema).forEach((k, v) -> props.put(k, String.valueOf(v)));
                props.remove("datasources.default.maximum-pool-size");
                props.put("idempotency.store.redis.enabled", "false");
                props.put("idempotency.retention", "2m");
            }
            default -> throw new IllegalArgumentException("unknown store " + store + "; use memory, redis or postgres");
        }
        try (LoadService service = LoadService.start(props, List.of())) {
            String base = "http://127.0.0.1:" + service.port;
            // warm both routes until the JIT has compiled them, then the saturated rate of new keys
            wrk.run(base, Wrk.Kind.NEW_KEYS, runId + "-w1", 2, 32, 15);
            wrk.run(base, Wrk.Kind.BASELINE_NEW, runId + "-w2", 2, 32, 5);
            double saturated = wrk.run(base, Wrk.Kind.NEW_KEYS, runId + "-s", 2, 32, 10).requestsPerSecond();
            int rate = (int) Math.max(1, saturated / 2);
            openLoop(URI.create(base + Wrk.Kind.NEW_KEYS.path), rate, 5, runId + "-w3"); // at the rate
            List<Round> route = new ArrayList<>();
            List<Round> filter = new ArrayList<>();
            for (int r = 0; r < ROUNDS; r++) {
                route.add(openLoop(URI.create(base + Wrk.Kind.BASELINE_NEW.path), rate, seconds, runId + "-b" + r));
                filter.add(openLoop(URI.create(base + Wrk.Kind.NEW_KEYS.path), rate, seconds, runId + "-f" + r));
            }
            double routeP99 = median(route, 0.99);
            double filterP99 = median(filter, 0.99);
            long failed = filter.stream().mapToLong(Round::failed).sum() + route.stream().mapToLong(Round::failed).sum();
            return "| " + store + " | " + Math.round(saturated) + " | " + rate + " | " + ms(median(route, 0.5)) + " | "
                + ms(routeP99) + " | " + ms(median(route, 0.999)) + " | " + ms(median(filter, 0.5)) + " | "
                + ms(filterP99) + " | " + ms(median(filter, 0.999)) + " | "
                + String.format("%.1f", filterP99 / routeP99) + " | " + failed + " |";
        } finally {
            if (schema != null) {
                TestPostgres.dropSchema(schema);
            }
        }
    }

    /** Connections of the open-loop load; each sends every {@value}th request of the schedule. */
    private static final int CONNECTIONS = 32;

    /**
     * Sends {@code rate} requests per second for {@code seconds}, a new key each, spread over
     * {@value #CONNECTIONS} keep-alive connections (request {@code i} on connection
     * {@code i % CONNECTIONS}, as wrk2 does): each is written at its scheduled time, or as soon as
     * its connection's previous answer arrived if that was later, and its latency counts from the
     * scheduled time. Plain sockets and precomposed requests: the generator shares the machine's
     * cores with the service, so it must cost little.
     */
    private static Round openLoop(URI target, int rate, int seconds, String keyPrefix) throws Exception {
        long total = (long) rate * seconds;
        long interval = 1_000_000_000L / rate;
        long[] latencies = new long[(int) total];
        AtomicLong failed = new AtomicLong();
        long start = System.nanoTime() + 50_000_000;
        byte[] body = Wrk.BODY.getBytes(StandardCharsets.UTF_8);
        String head = "POST " + target.getRawPath() + " HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
            + "Content-Length: " + body.length + "\r\nIdempotency-Key: \"" + keyPrefix + "-";
        List<Thread> threads = new ArrayList<>();
        for (int c = 0; c < CONNECTIONS; c++) {
            int connection = c;
            Thread t = new Thread(() -> {
                try (java.net.Socket socket = new java.net.Socket(target.getHost(), target.getPort())) {
                    socket.setTcpNoDelay(true);
                    socket.setSoTimeout(30_000);
                    java.io.OutputStream out = socket.getOutputStream();
                    java.io.InputStream in = new java.io.BufferedInputStream(socket.getInputStream());
                    for (long i = connection; i < total; i += CONNECTIONS) {
                        long scheduled = start + i * interval;
                        long wait;
                        while ((wait = scheduled - System.nanoTime()) > 0) {
                            LockSupport.parkNanos(wait);
                        }
                        out.write((head + i + "\"\r\n\r\n").getBytes(StandardCharsets.ISO_8859_1));
                        out.write(body);
                        out.flush();
                        int status = readResponse(in);
                        latencies[(int) i] = System.nanoTime() - scheduled;
                        if (status >= 300) {
                            failed.incrementAndGet();
                        }
                    }
                } catch (java.io.IOException e) {
                    failed.incrementAndGet();
                    System.out.println("connection " + connection + ": " + e);
                }
            }, "constant-rate-" + c);
            t.start();
            threads.add(t);
        }
        for (Thread t : threads) {
            t.join();
        }
        long unanswered = Arrays.stream(latencies).filter(l -> l == 0).count();
        if (unanswered > 0) {
            System.out.println(unanswered + " requests were never sent or answered (their connection failed)");
        }
        Arrays.sort(latencies);
        return new Round(latencies, failed.get());
    }

    /** Reads one HTTP/1.1 response (its head, then Content-Length bytes of body); @return its status */
    private static int readResponse(java.io.InputStream in) throws java.io.IOException {
        StringBuilder line = new StringBuilder();
        int status = -1;
        int length = 0;
        while (true) {
            int b = in.read();
            if (b < 0) {
                throw new java.io.IOException("the service closed the connection");
            }
            if (b == '\n') {
                String text = line.toString().trim();
                if (text.isEmpty()) {
                    break;
                }
                if (status < 0) {
                    status = Integer.parseInt(text.split(" ")[1]);
                } else if (text.regionMatches(true, 0, "content-length:", 0, 15)) {
                    length = Integer.parseInt(text.substring(15).trim());
                }
                line.setLength(0);
            } else {
                line.append((char) b);
            }
        }
        in.skipNBytes(length);
        return status;
    }

    private static double median(List<Round> rounds, double p) {
        double[] values = rounds.stream().mapToDouble(r -> r.percentile(p)).sorted().toArray();
        return values[values.length / 2];
    }

    private static String ms(double nanos) {
        return String.format("%.2f ms", nanos / 1e6);
    }
}
