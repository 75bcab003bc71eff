package dev.idempotency.benchmarks;

import dev.idempotency.server.store.AcquireResult;
import dev.idempotency.server.store.IdempotencyStore;
import dev.idempotency.server.store.StoredResponse;
import dev.idempotency.testsupport.TestRedis;
import io.lettuce.core.api.StatefulRedisConnection;
import io.micronaut.context.ApplicationContext;
import org.openjdk.jmh.annotations.Benchmark;
import org.openjdk.jmh.annotations.BenchmarkMode;
import org.openjdk.jmh.annotations.Fork;
import org.openjdk.jmh.annotations.Level;
import org.openjdk.jmh.annotations.Measurement;
import org.openjdk.jmh.annotations.Mode;
import org.openjdk.jmh.annotations.OutputTimeUnit;
import org.openjdk.jmh.annotations.Param;
import org.openjdk.jmh.annotations.Scope;
import org.openjdk.jmh.annotations.Setup;
import org.openjdk.jmh.annotations.State;
import org.openjdk.jmh.annotations.TearDown;
import org.openjdk.jmh.annotations.Warmup;

import java.nio.charset.StandardCharsets;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.time.Duration;
import java.util.HashMap;
import java.util.HexFormat;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import java.util.concurrent.atomic.AtomicLong;

/**
 * Latency of the idempotency stores (CONTRACT S17), each against the raw round trip of the
 * same server measured in the same run:
 * <ul>
 *   <li>{@code acquireComplete}: a new key acquired and completed with a 200-byte JSON
 *       response: what an executed request costs in store calls;</li>
 *   <li>{@code replay}: an acquire that finds a completed record: what a retry costs;</li>
 *   <li>{@code baseline}: the server's cheapest round trip: Redis {@code PING};
 *       {@code ConcurrentHashMap.get} for the in-memory store.</li>
 * </ul>
 * The stores come from a real Micronaut context, configured as an application would. Run
 * single-threaded ({@code -t 1}) and with 16 threads ({@code -t 16}); see benchmarks/README.md.
 */
@State(Scope.Benchmark)
@BenchmarkMode(Mode.AverageTime)
@OutputTimeUnit(java.util.concurrent.TimeUnit.MICROSECONDS)
@Fork(value = 1, jvmArgsAppend = {"-Xms1g", "-Xmx1g"})
@Warmup(iterations = 3, time = 2)
@Measurement(iterations = 5, time = 2)
public class StoreBenchmark {

    private static final Duration LEASE = Duration.ofSeconds(30);
    /** Short, so the keys a run leaves in a shared Redis expire soon after it. */
    private static final Duration RETENTION = Duration.ofSeconds(30);

    @Param({"memory", "redis"})
    public String store;

    private ApplicationContext context;
    private IdempotencyStore idempotencyStore;
    private Runnable baseline;
    private final AtomicLong sequence = new AtomicLong();
    private final String runId = UUID.randomUUID().toString();
    private byte[] fingerprint;
    private String replayKey;
    private StoredResponse response;
    private final Map<String, String> probe = new java.util.concurrent.ConcurrentHashMap<>(Map.of("k", "v"));

    @Setup(Level.Trial)
    public void start() {
        Map<String, Object> props = new HashMap<>();
        props.put("micronaut.server.port", "-1");
        switch (store) {
            case "memory" -> props.put("idempotency.store.redis.enabled", "false");
            case "redis" -> props.put("redis.uri", TestRedis.uri());
            default -> throw new IllegalArgumentException("unknown store " + store);
        }
        context = ApplicationContext.run(props);
        idempotencyStore = context.getBean(IdempotencyStore.class);
        if (store.equals("redis")) {
            @SuppressWarnings("unchecked")
            StatefulRedisConnection<String, String> redis = context.getBean(StatefulRedisConnection.class);
            baseline = () -> redis.sync().ping();
        } else {
            baseline = () -> probe.get("k");
        }
        fingerprint = sha256("POST /payments {\"amount\":1000}");
        response = new StoredResponse(201, Map.of("Content-Type", List.of("application/json"),
            "Location", List.of("/payments/pay_1")),
            ("{\"id\":\"pay_1\",\"status\":\"AUTHORIZED\",\"amount\":1000,\"currency\":\"EUR\",\"customer\":"
                + "\"cus_42\",\"description\":\"Order 1001\",\"createdAt\":\"2026-11-21T15:00:00Z\","
                + "\"metadata\":{}}").getBytes(StandardCharsets.UTF_8), false);
        replayKey = key();
        AcquireResult.Acquired a = (AcquireResult.Acquired) idempotencyStore.acquire(replayKey, fingerprint, LEASE);
        idempotencyStore.complete(replayKey, a.fencingToken(), response, RETENTION);
    }

    @TearDown(Level.Trial)
    public void stop() {
        if (context != null) {
            context.close();
        }
    }

    private String key() {
        return sha256Hex(runId + ":" + sequence.incrementAndGet());
    }

    @Benchmark
    public boolean acquireComplete() {
        String key = key();
        AcquireResult r = idempotencyStore.acquire(key, fingerprint, LEASE);
        return idempotencyStore.complete(key, ((AcquireResult.Acquired) r).fencingToken(), response, RETENTION);
    }

    @Benchmark
    public AcquireResult replay() {
        return idempotencyStore.acquire(replayKey, fingerprint, LEASE);
    }

    @Benchmark
    public void baseline() {
        baseline.run();
    }

    private static byte[] sha256(String s) {
        try {
            return MessageDigest.getInstance("SHA-256").digest(s.getBytes(StandardCharsets.UTF_8));
        } catch (NoSuchAlgorithmException e) {
            throw new IllegalStateException(e);
        }
    }

    private static String sha256Hex(String s) {
        return HexFormat.of().formatHex(sha256(s));
    }
}
