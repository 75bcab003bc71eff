package dev.idempotency.benchmarks;

import dev.idempotency.server.store.AcquireResult;
import dev.idempotency.server.store.IdempotencyStore;
import dev.idempotency.server.store.StoredResponse;
import dev.idempotency.testsupport.TestPostgres;
import io.lettuce.core.api.StatefulRedisConnection;
import io.micronaut.context.ApplicationContext;
import io.micronaut.data.connection.jdbc.advice.DelegatingDataSource;
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

import javax.sql.DataSource;
import java.nio.charset.StandardCharsets;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.SQLException;
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
 *   <li>{@code acquireStepComplete}: the same with one durable step's 100-byte result recorded
 *       between acquire and completion: a step's record beside a completion's;</li>
 *   <li>{@code replay}: an acquire that finds a completed record: what a retry costs;</li>
 *   <li>{@code baseline}: the server's cheapest round trip: Redis {@code PING}, PostgreSQL
 *       {@code SELECT 1} through the same connection pool, {@code ConcurrentHashMap.get} for
 *       the in-memory store;</li>
 *   <li>{@code baselineWrite}: the server's cheapest durable write: Redis {@code SET} with a
 *       TTL, PostgreSQL a one-row {@code INSERT} (autocommit), a {@code ConcurrentHashMap.put}
 *       in memory.</li>
 * </ul>
 * The stores come from a real Micronaut context, configured as an application would. Run
 * single-threaded ({@code -t 1}) and with 16 threads ({@code -t 16}); see benchmarks/README.md.
 *
 * <p>How cost grows (issue 13): {@code -p records=10000,1000000,10000000} fills the store with
 * that many completed records before the measurement (copies of the replay record under other
 * keys of the same length, made inside the server: a Lua loop in Redis, one
 * {@code INSERT ... SELECT} per million rows in PostgreSQL, then {@code VACUUM ANALYZE}); the
 * setup prints what the fill cost in bytes per record. The filled records outlive the run by
 * at most two hours; the teardown removes them.
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

    @Param({"memory", "redis", "postgres"})
    public String store;

    /** Completed records in the store before the measurement starts (Redis and PostgreSQL). */
    @Param({"0"})
    public long records;

    /** The fill's keys have the length of the store's real ones (SHA-256 in hex). */
    private static final long FILL_TTL_MILLIS = Duration.ofHours(2).toMillis();
    private String redisPrefix;

    private ApplicationContext context;
    private IdempotencyStore idempotencyStore;
    private Runnable baseline;
    private Runnable baselineWrite;
    private String schema;
    private final AtomicLong sequence = new AtomicLong();
    private final String runId = UUID.randomUUID().toString();
    private byte[] fingerprint;
    private String replayKey;
    private StoredResponse response;
    private byte[] stepResult;
    private final Map<String, String> probe = new java.util.concurrent.ConcurrentHashMap<>(Map.of("k", "v"));

    @Setup(Level.Trial)
    public void start() {
        Map<String, Object> props = new HashMap<>();
        redisPrefix = store.equals("redis") ? "bench:" + runId.substring(0, 8) + ":" : null;
        schema = store.equals("postgres") ? TestPostgres.newSchema() : null;
        props.putAll(StoreFill.settings(store, redisPrefix, schema));
        if (store.equals("memory")) {
            props.put("idempotency.store.memory.max-entries", "1000000");
        }
        context = ApplicationContext.run(props);
        idempotencyStore = context.getBean(IdempotencyStore.class);
        switch (store) {
            case "redis" -> {
                @SuppressWarnings("unchecked")
                StatefulRedisConnection<String, String> redis = context.getBean(StatefulRedisConnection.class);
                baseline = () -> redis.sync().ping();
                baselineWrite = () -> redis.sync().psetex(runId + ":w:" + sequence.incrementAndGet(), 30_000, "v");
            }
            case "postgres" -> {
                // the pool itself, as the store uses it, not Micronaut Data's transaction-bound proxy
                DataSource ds = DelegatingDataSource.unwrapDataSource(context.getBean(DataSource.class));
                TestPostgres.execute("CREATE TABLE " + schema + ".bench_write (id bigint PRIMARY KEY, v text)");
                baseline = () -> sql(ds, "SELECT 1", null);
                baselineWrite = () -> sql(ds, "INSERT INTO " + schema + ".bench_write (id, v) VALUES (?, 'v')",
                    sequence.incrementAndGet());
            }
            default -> {
                baseline = () -> probe.get("k");
                baselineWrite = () -> probe.put("w" + sequence.incrementAndGet() % 1024, "v");
            }
        }
        fingerprint = sha256("POST /payments {\"amount\":1000}");
        response = new StoredResponse(201, Map.of("Content-Type", List.of("application/json"),
            "Location", List.of("/payments/pay_1")),
            ("{\"id\":\"pay_1\",\"status\":\"AUTHORIZED\",\"amount\":1000,\"currency\":\"EUR\",\"customer\":"
                + "\"cus_42\",\"description\":\"Order 1001\",\"createdAt\":\"2026-11-21T15:00:00Z\","
                + "\"metadata\":{}}").getBytes(StandardCharsets.UTF_8), false);
        stepResult = ("{\"id\":\"ch_1\",\"payment\":\"pay_1\",\"amount\":1000,\"currency\":\"EUR\","
            + "\"gateway\":\"card-gateway\",\"at\":\"2026\"}").getBytes(StandardCharsets.UTF_8);
        replayKey = key();
        AcquireResult.Acquired a = (AcquireResult.Acquired) idempotencyStore.acquire(replayKey, fingerprint, LEASE)
            .toCompletableFuture().join();
        idempotencyStore.complete(replayKey, a.fencingToken(), response, RETENTION).toCompletableFuture().join();
        if (records > 0) {
            long started = System.nanoTime();
            String cost = switch (store) {
                case "redis" -> fillRedis();
                case "postgres" -> fillPostgres();
                default -> throw new IllegalArgumentException("-p records needs store=redis or store=postgres");
            };
            System.out.printf("%n[fill] %s: %,d records in %.1f s; %s%n", store, records,
                (System.nanoTime() - started) / 1e9, cost);
        }
    }

    /** Copies the replay record {@link #records} times inside Redis. @return bytes per record */
    @SuppressWarnings("unchecked")
    private String fillRedis() {
        StatefulRedisConnection<String, String> redis = context.getBean(StatefulRedisConnection.class);
        long before = StoreFill.redisMemory(redis);
        StoreFill.redis(redis, redisPrefix, replayKey, 1, records, FILL_TTL_MILLIS);
        long grew = StoreFill.redisMemory(redis) - before;
        return String.format("used_memory grew %,d bytes: %,d bytes per record", grew, grew / records);
    }

    /** Copies the replay row {@link #records} times inside PostgreSQL. @return bytes per record */
    private String fillPostgres() {
        StoreFill.postgres(schema, replayKey, 1, records, FILL_TTL_MILLIS);
        long bytes = StoreFill.postgresBytes(DelegatingDataSource.unwrapDataSource(context.getBean(DataSource.class)),
            schema);
        return String.format("pg_total_relation_size %,d bytes: %,d bytes per record", bytes, bytes / records);
    }

    @TearDown(Level.Trial)
    public void stop() {
        if (redisPrefix != null && records > 0 && context != null) {
            @SuppressWarnings("unchecked")
            StatefulRedisConnection<String, String> redis = context.getBean(StatefulRedisConnection.class);
            io.lettuce.core.ScanArgs match = io.lettuce.core.ScanArgs.Builder.matches(redisPrefix + "*").limit(10_000);
            io.lettuce.core.KeyScanCursor<String> cursor = redis.sync().scan(match);
            while (true) {
                if (!cursor.getKeys().isEmpty()) {
                    redis.sync().unlink(cursor.getKeys().toArray(String[]::new));
                }
                if (cursor.isFinished()) {
                    break;
                }
                cursor = redis.sync().scan(cursor, match);
            }
        }
        if (context != null) {
            context.close();
        }
        if (schema != null) {
            TestPostgres.dropSchema(schema);
        }
    }

    private static void sql(DataSource ds, String sql, Long id) {
        try (Connection c = ds.getConnection(); PreparedStatement ps = c.prepareStatement(sql)) {
            if (id != null) {
                ps.setLong(1, id);
            }
            ps.execute();
        } catch (SQLException e) {
            throw new IllegalStateException(e);
        }
    }

    private String key() {
        return sha256Hex(runId + ":" + sequence.incrementAndGet());
    }

    @Benchmark
    public boolean acquireComplete() {
        String key = key();
        return idempotencyStore.acquire(key, fingerprint, LEASE)
            .thenCompose(r -> idempotencyStore.complete(key, ((AcquireResult.Acquired) r).fencingToken(), response,
                RETENTION))
            .toCompletableFuture().join();
    }

    /**
     * {@link #acquireComplete} with one durable step (CONTRACT S23) recorded between the two, as
     * a handler that runs one step does: the difference is what a step's record costs. (A run
     * that resumes also reads its steps once, one more round trip.)
     */
    @Benchmark
    public boolean acquireStepComplete() {
        String key = key();
        return idempotencyStore.acquire(key, fingerprint, LEASE)
            .thenCompose(r -> {
                long token = ((AcquireResult.Acquired) r).fencingToken();
                return idempotencyStore.recordStep(key, token, "charge-card", stepResult, RETENTION.plus(LEASE))
                    .thenCompose(recorded -> idempotencyStore.complete(key, token, response, RETENTION));
            })
            .toCompletableFuture().join();
    }

    @Benchmark
    public AcquireResult replay() {
        return idempotencyStore.acquire(replayKey, fingerprint, LEASE).toCompletableFuture().join();
    }

    @Benchmark
    public void baseline() {
        baseline.run();
    }

    @Benchmark
    public void baselineWrite() {
        baselineWrite.run();
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
