package dev.idempotency.benchmarks.load;

import dev.idempotency.server.store.AcquireResult;
import dev.idempotency.server.store.IdempotencyStore;
import dev.idempotency.server.store.StoredResponse;
import dev.idempotency.testsupport.RedisWire;
import dev.idempotency.testsupport.TestRedis;
import io.micronaut.context.ApplicationContext;

import java.net.URI;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.UUID;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ThreadLocalRandom;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicLong;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * What one Redis core serves (issue 72's capacity): the Redis store ({@code RedisIdempotencyStore},
 * as the filter calls it) driven directly, with {@code --inflight} operations always in flight
 * from this JVM, for {@code --seconds}: new keys (acquire, then complete with a 75-byte body) and
 * replays (acquire of a completed key). For each, operations per second, the Redis server's CPU
 * per operation and its utilisation (CPU seconds per second, 1.0 a saturated core); the capacity
 * of one core is 1 s divided by the CPU per operation. Beside them, {@code redis-benchmark}'s
 * plain {@code SET} on the same server and machine.
 *
 * <p>{@code java -cp benchmarks/load/target/load-benchmark.jar dev.idempotency.benchmarks.load.RedisCapacity
 * [--seconds=20] [--inflight=512] [--rounds=3]}; the report goes to stdout and
 * {@code benchmarks/load/target/redis-capacity.md}.
 */
public final class RedisCapacity {

    private static final Duration LEASE = Duration.ofSeconds(30);
    private static final Duration RETENTION = Duration.ofMinutes(30); // outlives the run: every replay finds its record

    private RedisCapacity() {
    }

    /** One phase's figures. */
    record Figures(double opsPerSecond, double redisMicrosPerOp, double redisUtilisation) {
    }

    public static void main(String[] args) throws Exception {
        Map<String, String> options = LoadBenchmark.options(args);
        int seconds = Integer.parseInt(options.getOrDefault("seconds", "20"));
        int inflight = Integer.parseInt(options.getOrDefault("inflight", "512"));
        int rounds = Integer.parseInt(options.getOrDefault("rounds", "3"));
        URI redis = URI.create(TestRedis.uri());
        long server = ProcCpu.find("redis-server", ":" + RedisWire.port(redis));
        if (server < 0) {
            throw new IllegalStateException("no single redis-server process on this machine listens on " + redis
                + ": its CPU cannot be read");
        }
        String prefix = "capacity-" + UUID.randomUUID().toString().substring(0, 8) + ":";
        List<String> report = new ArrayList<>();
        try (ApplicationContext ctx = ApplicationContext.run(Map.of("redis.uri", redis.toString(),
            "idempotency.store.redis.key-prefix", prefix, "idempotency.store.redis.enabled", "true"))) {
            IdempotencyStore store = ctx.getBean(IdempotencyStore.class);
            byte[] fingerprint = new byte[33];
            fingerprint[0] = 2;
            StoredResponse response = new StoredResponse(201, Map.of("Content-Type", List.of("application/json"),
                "Location", List.of("/payments/pay_0123456789abcdef")),
                "{\"amount\":1000,\"currency\":\"EUR\",\"customer\":\"cus_42\",\"description\":\"Order 1001\"}"
                    .getBytes(StandardCharsets.UTF_8), false);
            List<String> replayKeys = new ArrayList<>();
            for (int i = 0; i < 1000; i++) {
                String key = "replay-" + i + "-" + UUID.randomUUID();
                AcquireResult.Acquired a = (AcquireResult.Acquired) store.acquire(key, fingerprint, LEASE)
                    .toCompletableFuture().join();
                store.complete(key, a.fencingToken(), response, RETENTION).toCompletableFuture().join();
                replayKeys.add(key);
            }
            drive("warm-up", seconds, inflight, server, key -> newKey(store, key, fingerprint, response));
            List<Figures> news = new ArrayList<>();
            List<Figures> replays = new ArrayList<>();
            for (int round = 0; round < rounds; round++) {
                news.add(drive("new keys", seconds, inflight, server, key -> newKey(store, key, fingerprint, response)));
                replays.add(drive("replays", seconds, inflight, server, key -> store.acquire(
                    replayKeys.get(ThreadLocalRandom.current().nextInt(replayKeys.size())), fingerprint, LEASE)
                    .toCompletableFuture().thenApply(r -> {
                        if (!(r instanceof AcquireResult.Replay)) {
                            throw new IllegalStateException("expected a replay, got " + r);
                        }
                        return null;
                    })));
            }
            double setPerSecond = redisBenchmarkSet(redis, 1);
            double pipelinedSetPerSecond = redisBenchmarkSet(redis, 16);
            report.add(String.format(Locale.ROOT, "Redis store driven directly, %d operations in flight, %d rounds of %d s"
                + " (median):", inflight, rounds, seconds));
            report.add("");
            report.add("| operation | ops/s | Redis CPU per op | Redis core busy | one core serves |");
            report.add("|---|---:|---:|---:|---:|");
            report.add(row("new key (acquire + complete)", news));
            report.add(row("replay (acquire)", replays));
            report.add(String.format(Locale.ROOT, "| redis-benchmark SET, 230 B (50 clients, no pipelining) | %,.0f | | | %,.0f/s |",
                setPerSecond, setPerSecond));
            report.add(String.format(Locale.ROOT, "| redis-benchmark SET, 230 B (50 clients, 16 pipelined) | %,.0f | | | %,.0f/s |",
                pipelinedSetPerSecond, pipelinedSetPerSecond));
        } finally {
            System.err.println(StoreFloors.deleteRecords(redis.toString(), prefix));
        }
        Path out = Path.of("benchmarks/load/target/redis-capacity.md");
        Files.createDirectories(out.getParent());
        Files.writeString(out, String.join("\n", report) + "\n");
        report.forEach(System.out::println);
    }

    private static String row(String what, List<Figures> rounds) {
        double ops = LoadStatistics.median(rounds.stream().mapToDouble(Figures::opsPerSecond).toArray());
        double cpu = LoadStatistics.median(rounds.stream().mapToDouble(Figures::redisMicrosPerOp).toArray());
        double busy = LoadStatistics.median(rounds.stream().mapToDouble(Figures::redisUtilisation).toArray());
        return String.format(Locale.ROOT, "| %s | %,.0f | %.1f µs | %.2f | %,.0f/s |", what, ops, cpu, busy, 1e6 / cpu);
    }

    private static CompletableFuture<Void> newKey(IdempotencyStore store, String key, byte[] fingerprint,
                                                  StoredResponse response) {
        return store.acquire(key, fingerprint, LEASE).toCompletableFuture().thenCompose(r -> {
            long token = ((AcquireResult.Acquired) r).fencingToken();
            return store.complete(key, token, response, RETENTION).toCompletableFuture();
        }).thenApply(stored -> {
            if (!stored) {
                throw new IllegalStateException("a completion was fenced");
            }
            return null;
        });
    }

    /** An operation on a key. */
    interface Operation {
        CompletableFuture<Void> run(String key);
    }

    private static Figures drive(String what, int seconds, int inflight, long server,
                                 Operation operation) throws InterruptedException {
        AtomicLong done = new AtomicLong();
        AtomicLong failed = new AtomicLong();
        AtomicBoolean running = new AtomicBoolean(true);
        String run = UUID.randomUUID().toString().substring(0, 8);
        AtomicLong next = new AtomicLong();
        long cpuBefore = ProcCpu.process(server);
        long start = System.nanoTime();
        for (int i = 0; i < inflight; i++) {
            chain(operation, run, next, done, failed, running);
        }
        Thread.sleep(seconds * 1000L);
        running.set(false);
        long elapsed = System.nanoTime() - start;
        long cpu = ProcCpu.process(server) - cpuBefore;
        long ops = done.get();
        Thread.sleep(500); // the operations still in flight end
        if (failed.get() > 0) {
            throw new IllegalStateException(what + ": " + failed.get() + " operations failed");
        }
        Figures f = new Figures(ops / (elapsed / 1e9), cpu / 1000.0 / ops, cpu / (double) elapsed);
        System.err.printf(Locale.ROOT, "%s: %,.0f ops/s, Redis %.1f µs/op, Redis busy %.2f%n", what, f.opsPerSecond(),
            f.redisMicrosPerOp(), f.redisUtilisation());
        return f;
    }

    private static void chain(Operation operation, String run, AtomicLong next, AtomicLong done, AtomicLong failed,
                              AtomicBoolean running) {
        if (!running.get()) {
            return;
        }
        operation.run(run + "-" + next.incrementAndGet()).whenComplete((v, e) -> {
            if (e != null) {
                failed.incrementAndGet();
                e.printStackTrace();
                return;
            }
            done.incrementAndGet();
            chain(operation, run, next, done, failed, running);
        });
    }

    /** @return {@code redis-benchmark}'s SET requests per second against the same server, {@code pipeline} per client */
    private static double redisBenchmarkSet(URI redis, int pipeline) throws Exception {
        Process p = new ProcessBuilder("redis-benchmark", "-h", redis.getHost(), "-p", Integer.toString(RedisWire.port(redis)),
            "-t", "set", "-n", pipeline > 1 ? "4000000" : "1000000", "-d", "230", "-P", Integer.toString(pipeline), "-q")
            .redirectErrorStream(true).start();
        String out = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
        p.waitFor();
        Matcher m = Pattern.compile("SET: ([0-9.]+) requests per second").matcher(out);
        if (!m.find()) {
            throw new IllegalStateException("redis-benchmark said: " + out);
        }
        new ProcessBuilder("redis-cli", "-h", redis.getHost(), "-p", Integer.toString(RedisWire.port(redis)), "DEL",
            "key:__rand_int__").start().waitFor(); // the one key it wrote
        return Double.parseDouble(m.group(1));
    }
}
