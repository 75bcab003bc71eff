package dev.idempotency.benchmarks;

import dev.idempotency.server.store.AcquireResult;
import dev.idempotency.server.store.IdempotencyStore;
import dev.idempotency.server.store.StoredResponse;
import dev.idempotency.testsupport.TestPostgres;
import io.micronaut.context.ApplicationContext;
import io.micronaut.data.connection.jdbc.advice.DelegatingDataSource;

import javax.sql.DataSource;
import java.nio.charset.StandardCharsets;
import java.sql.Connection;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.time.Duration;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicLong;

/**
 * Whether the PostgreSQL store's purge keeps up (issue 13), with the store configured as an
 * application would (its defaults unless a {@code -Dprop.<setting>=<value>} says otherwise), on
 * the configured or embedded PostgreSQL, in a fresh schema:
 * <ul>
 *   <li>{@code drain N}: N completed records whose retention has ended are put in the table
 *       (inside the server, one {@code INSERT ... SELECT}); the store starts with its purge on,
 *       and the run prints how long the purge took to delete them, in rows per second;</li>
 *   <li>{@code steady MINUTES RETENTION [STORE]}: client threads acquire and complete new keys
 *       without pause (the store's own ceiling) for MINUTES minutes, with retention RETENTION (an
 *       ISO-8601 duration, e.g. PT30S), on STORE ({@code postgres} by default, {@code redis} or
 *       {@code memory}); every 30 s the run prints the records written so far and their rate, the
 *       records the store holds and its size (PostgreSQL: the table's rows and total size; Redis:
 *       its keys and {@code used_memory}; in memory: its records and its own byte count), and the
 *       p99 of the writes in those 30 s. The size stays flat when the purge (or Redis's expiry)
 *       keeps up.</li>
 * </ul>
 * Usage: {@code java -cp benchmarks/target/benchmarks.jar dev.idempotency.benchmarks.PurgeRun drain 1000000}.
 * Not a test: it asserts nothing; benchmarks/README.md has its figures.
 */
public final class PurgeRun {

    private static final Duration LEASE = Duration.ofSeconds(30);

    private PurgeRun() {
    }

    public static void main(String[] args) throws Exception {
        if (args.length < 2) {
            System.err.println("usage: PurgeRun drain N | PurgeRun steady MINUTES RETENTION [postgres|redis|memory]");
            System.exit(2);
        }
        String store = args[0].equals("steady") && args.length > 3 ? args[3] : "postgres";
        String schema = store.equals("postgres") ? TestPostgres.newSchema() : null;
        String redisPrefix = store.equals("redis") ? "purge-run:" + System.nanoTime() + ":" : null;
        Map<String, Object> props = new HashMap<>(StoreFill.settings(store, redisPrefix, schema));
        props.remove("idempotency.store.postgres.purge-enabled"); // the purge under test runs as configured
        props.put("idempotency.store.type", store);
        System.getProperties().stringPropertyNames().stream().filter(n -> n.startsWith("prop."))
            .forEach(n -> props.put(n.substring("prop.".length()), System.getProperty(n)));
        try {
            if (args[0].equals("drain")) {
                drain(schema, props, Long.parseLong(args[1]));
            } else {
                steady(store, schema, props, Integer.parseInt(args[1]), Duration.parse(args[2]));
            }
        } finally {
            if (schema != null) {
                TestPostgres.dropSchema(schema);
            }
            if (redisPrefix != null) {
                dev.idempotency.testsupport.TestRedis.deleteKeys(redisPrefix);
            }
        }
        System.exit(0);
    }

    private static void drain(String schema, Map<String, Object> props, long rows) throws Exception {
        String table = schema + ".idempotency_records";
        // the schema first, with the purge off, so the fill is in place before the purge starts
        Map<String, Object> quiet = new HashMap<>(props);
        quiet.put("idempotency.store.postgres.purge-enabled", "false");
        try (ApplicationContext context = ApplicationContext.run(quiet)) {
            IdempotencyStore store = context.getBean(IdempotencyStore.class);
            completeOne(store, "template", Duration.ofSeconds(30));
            DataSource ds = DelegatingDataSource.unwrapDataSource(context.getBean(DataSource.class));
            long started = System.nanoTime();
            execute(ds, "INSERT INTO " + table + " (store_key, fingerprint, fencing_token, holder, completed,"
                + " acquired_at, expires_at, response_status, response_headers, response_body, body_omitted)"
                + " SELECT decode(md5(g::text) || md5(g::text), 'hex'), fingerprint, fencing_token, holder, completed, acquired_at,"
                + " now() - interval '1 minute', response_status, response_headers, response_body, body_omitted"
                + " FROM " + table + ", generate_series(1, " + rows + ") g WHERE store_key = '\\x0074656d706c617465'");
            execute(ds, "VACUUM ANALYZE " + table);
            System.out.printf("filled %,d expired records in %.1f s%n", rows, (System.nanoTime() - started) / 1e9);
        }
        System.out.println("purge settings: " + settings(props));
        long started = System.nanoTime();
        try (ApplicationContext context = ApplicationContext.run(props)) {
            DataSource ds = DelegatingDataSource.unwrapDataSource(context.getBean(DataSource.class));
            long left = rows;
            while (left > 1) {
                Thread.sleep(1000);
                left = queryLong(ds, "SELECT count(*) FROM " + table);
                System.out.printf("  %5.1f s: %,d rows left%n", (System.nanoTime() - started) / 1e9, left);
            }
            double seconds = (System.nanoTime() - started) / 1e9;
            System.out.printf("purged %,d rows in %.1f s (the first run starts one purge-interval after startup):"
                + " %,.0f rows/s%n", rows, seconds, rows / seconds);
        }
    }

    private static void steady(String storeName, String schema, Map<String, Object> props, int minutes,
                               Duration retention) throws Exception {
        System.out.println(storeName + ", " + (storeName.equals("postgres") ? "purge settings: " + settings(props) + ", "
            : "") + "retention " + retention);
        try (ApplicationContext context = ApplicationContext.run(props)) {
            IdempotencyStore store = context.getBean(IdempotencyStore.class);
            AtomicBoolean running = new AtomicBoolean(true);
            AtomicLong written = new AtomicLong();
            java.util.concurrent.atomic.AtomicReference<java.util.concurrent.atomic.AtomicLongArray> latencies =
                new java.util.concurrent.atomic.AtomicReference<>(new java.util.concurrent.atomic.AtomicLongArray(BUCKETS + 1));
            int clients = 16;
            Thread[] threads = new Thread[clients];
            for (int t = 0; t < clients; t++) {
                int id = t;
                threads[t] = new Thread(() -> {
                    long n = 0;
                    while (running.get()) {
                        try {
                            long t0 = System.nanoTime();
                            completeOne(store, "steady-" + id + "-" + n++, retention);
                            long micros = (System.nanoTime() - t0) / 1000;
                            latencies.get().incrementAndGet((int) Math.min(BUCKETS, micros / BUCKET_MICROS));
                            written.incrementAndGet();
                        } catch (RuntimeException e) {
                            // a 503-worthy failure under load: counted by its absence from "written"
                        }
                    }
                }, "steady-client-" + t);
                threads[t].start();
            }
            long started = System.nanoTime();
            long end = started + Duration.ofMinutes(minutes).toNanos();
            System.out.println("| elapsed | written | written/s since last | records held | size | p99 of the writes |");
            System.out.println("|---:|---:|---:|---:|---:|---:|");
            long lastWritten = 0;
            long lastAt = started;
            while (System.nanoTime() < end) {
                Thread.sleep(30_000);
                long now = System.nanoTime();
                long w = written.get();
                java.util.concurrent.atomic.AtomicLongArray interval =
                    latencies.getAndSet(new java.util.concurrent.atomic.AtomicLongArray(BUCKETS + 1));
                long[] held = held(storeName, context, store, schema);
                System.out.printf("| %d s | %,d | %,.0f | %,d | %,d MB | %,d µs |%n", (now - started) / 1_000_000_000L, w,
                    (w - lastWritten) / ((now - lastAt) / 1e9), held[0], held[1] >> 20, p99(interval));
                lastWritten = w;
                lastAt = now;
            }
            running.set(false);
            for (Thread t : threads) {
                t.join();
            }
        }
    }

    /** Latencies in buckets of {@value #BUCKET_MICROS} µs up to a second; the last one holds the rest. */
    private static final int BUCKET_MICROS = 10;
    private static final int BUCKETS = 100_000;

    /** @return the 99th percentile of {@code buckets}, in µs (the upper edge of its bucket) */
    private static long p99(java.util.concurrent.atomic.AtomicLongArray buckets) {
        long total = 0;
        for (int i = 0; i < buckets.length(); i++) {
            total += buckets.get(i);
        }
        long seen = 0;
        for (int i = 0; i < buckets.length(); i++) {
            seen += buckets.get(i);
            if (seen >= total * 0.99) {
                return (long) (i + 1) * BUCKET_MICROS;
            }
        }
        return 0;
    }

    /** @return the records {@code store} holds, and its size in bytes, each as the store counts them */
    @SuppressWarnings("unchecked")
    private static long[] held(String storeName, ApplicationContext context, IdempotencyStore store, String schema)
        throws SQLException {
        switch (storeName) {
            case "postgres" -> {
                DataSource ds = DelegatingDataSource.unwrapDataSource(context.getBean(DataSource.class));
                String table = schema + ".idempotency_records";
                return new long[] {queryLong(ds, "SELECT count(*) FROM " + table),
                    queryLong(ds, "SELECT pg_total_relation_size('" + table + "')")};
            }
            case "redis" -> {
                io.lettuce.core.api.StatefulRedisConnection<String, String> redis =
                    context.getBean(io.lettuce.core.api.StatefulRedisConnection.class);
                return new long[] {redis.sync().dbsize(), StoreFill.redisMemory(redis)};
            }
            default -> {
                dev.idempotency.server.store.memory.InMemoryIdempotencyStore m =
                    (dev.idempotency.server.store.memory.InMemoryIdempotencyStore) store;
                return new long[] {m.size(), m.bytes()};
            }
        }
    }

    private static String settings(Map<String, Object> props) {
        String p = "idempotency.store.postgres.";
        return "purge-interval " + props.getOrDefault(p + "purge-interval", "default") + ", purge-batch-size "
            + props.getOrDefault(p + "purge-batch-size", "default") + ", purge-max-batches "
            + props.getOrDefault(p + "purge-max-batches", "default");
    }

    private static void completeOne(IdempotencyStore store, String key, Duration retention) {
        byte[] fingerprint = key.getBytes(StandardCharsets.UTF_8);
        StoredResponse response = new StoredResponse(201, Map.of("Content-Type", List.of("application/json")),
            "{\"id\":\"pay_1\",\"status\":\"AUTHORIZED\",\"amount\":1000,\"currency\":\"EUR\"}"
                .getBytes(StandardCharsets.UTF_8), false);
        CompletableFuture<Boolean> done = store.acquire(key, fingerprint, LEASE)
            .thenCompose(r -> store.complete(key, ((AcquireResult.Acquired) r).fencingToken(), response, retention))
            .toCompletableFuture();
        done.join();
    }

    private static void execute(DataSource ds, String sql) throws SQLException {
        try (Connection c = ds.getConnection(); Statement s = c.createStatement()) {
            s.execute(sql);
        }
    }

    private static long queryLong(DataSource ds, String sql) throws SQLException {
        try (Connection c = ds.getConnection(); Statement s = c.createStatement(); ResultSet rs = s.executeQuery(sql)) {
            rs.next();
            return rs.getLong(1);
        }
    }
}
