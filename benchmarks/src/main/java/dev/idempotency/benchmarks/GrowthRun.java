package dev.idempotency.benchmarks;

import dev.idempotency.server.store.AcquireResult;
import dev.idempotency.server.store.IdempotencyStore;
import dev.idempotency.server.store.StoredResponse;
import dev.idempotency.server.store.memory.InMemoryIdempotencyStore;
import dev.idempotency.testsupport.TestPostgres;
import dev.idempotency.testsupport.TestRedis;
import io.lettuce.core.api.StatefulRedisConnection;
import io.micronaut.context.ApplicationContext;
import io.micronaut.data.connection.jdbc.advice.DelegatingDataSource;

import javax.sql.DataSource;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.security.MessageDigest;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashMap;
import java.util.HexFormat;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.UUID;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.atomic.AtomicLong;

/**
 * How acquire, completion and replay latency grow with the records a store holds (issue 61):
 * for each store, the records are grown in steps (10^4, 10^6, 10^7 by default; the in-memory
 * store up to what its byte bound holds), and at each step every operation is timed one call at
 * a time (one caller) and under load (16 callers), in three rounds of a few seconds; the report
 * gives each figure's median over the rounds, p50 and p99, in microseconds. The fill grows from
 * step to step: Redis and PostgreSQL copy a completed record inside the server ({@link StoreFill});
 * the in-memory store acquires and completes its records through its own API. Not a test: it
 * asserts nothing. Usage, after {@code mvn -pl benchmarks -am package -DskipTests}:
 * {@code java -Xmx6g -cp benchmarks/target/benchmarks.jar dev.idempotency.benchmarks.GrowthRun
 * [stores] [sizes] [seconds]}, e.g. {@code redis,postgres 10000,1000000,10000000 3}.
 */
public final class GrowthRun {

    private static final Duration LEASE = Duration.ofSeconds(30);
    /** The fill's and the replay record's: long enough that none of them expires while the run runs. */
    private static final Duration RETENTION = Duration.ofHours(2);
    /** The measured new keys': they expire, and are taken out, before the next measurement. */
    private static final Duration MEASURED = Duration.ofSeconds(1);
    private static final int ROUNDS = 3;
    private static final int[] CALLERS = {1, 16};
    /** The largest in-memory fill: about 2 GB of records at its own accounting, within -Xmx6g. */
    private static final long MEMORY_MAX = 2_000_000;
    private static final StringBuilder REPORT = new StringBuilder();

    private GrowthRun() {
    }

    public static void main(String[] args) throws Exception {
        List<String> stores = List.of((args.length > 0 ? args[0] : "memory,redis,postgres").split(","));
        long[] sizes = Arrays.stream((args.length > 1 ? args[1] : "10000,1000000,10000000").split(","))
            .mapToLong(Long::parseLong).toArray();
        Duration each = Duration.ofSeconds(args.length > 2 ? Long.parseLong(args[2]) : 3);
        line("# Growth run, %s, %d cores; medians of %d rounds of %d s, µs", Instant.now(),
            Runtime.getRuntime().availableProcessors(), ROUNDS, each.toSeconds());
        line("");
        line("| store | records | bytes/record | callers | acquire p50 / p99 | complete p50 / p99 | replay p50 / p99 |");
        line("|---|---:|---:|---:|---:|---:|---:|");
        for (String store : stores) {
            try (Target t = new Target(store)) {
                for (long size : sizes) {
                    if (store.equals("memory") && size > MEMORY_MAX) {
                        line("| memory | %,d | | | beyond the bound this run gives it (%,d records) | | |", size,
                            MEMORY_MAX);
                        continue;
                    }
                    String bytes = t.growTo(size);
                    for (int callers : CALLERS) {
                        long[][] rounds = new long[ROUNDS][];
                        for (int r = 0; r < ROUNDS; r++) {
                            rounds[r] = t.measure(callers, each);
                            t.forgetMeasured();
                        }
                        line("| %s | %,d | %s | %d | %s | %s | %s |", store, size, bytes, callers, median(rounds, 0),
                            median(rounds, 2), median(rounds, 4));
                    }
                }
            }
        }
        Path out = Path.of("benchmarks", "target", "growth.md");
        Files.createDirectories(out.getParent());
        Files.writeString(out, REPORT);
        System.out.println("-> " + out);
        System.exit(0);
    }

    /** @return "p50 / p99" of figure {@code at} (p50) and {@code at + 1} (p99), each the median of the rounds */
    private static String median(long[][] rounds, int at) {
        long[] p50 = Arrays.stream(rounds).mapToLong(r -> r[at]).sorted().toArray();
        long[] p99 = Arrays.stream(rounds).mapToLong(r -> r[at + 1]).sorted().toArray();
        return micros(p50[ROUNDS / 2]) + " / " + micros(p99[ROUNDS / 2]);
    }

    /** @return {@code nanos} in µs, with a decimal below 100 µs */
    private static String micros(long nanos) {
        return nanos < 100_000 ? String.format(Locale.ROOT, "%.1f", nanos / 1e3) : String.format(Locale.ROOT, "%,d", nanos / 1000);
    }

    private static void line(String format, Object... args) {
        String s = String.format(Locale.ROOT, format, args);
        System.out.println(s);
        REPORT.append(s).append('\n');
    }

    /** One store in a context of its own, with its replay record and its fill so far. */
    private static final class Target implements AutoCloseable {
        private final String store;
        private final ApplicationContext context;
        private final IdempotencyStore records;
        private final String runId = UUID.randomUUID().toString();
        private final AtomicLong sequence = new AtomicLong();
        private final byte[] fingerprint = sha256("POST /payments {\"amount\":1000}");
        private final StoredResponse response = new StoredResponse(201, Map.of("Content-Type",
            List.of("application/json"), "Location", List.of("/payments/pay_1")),
            ("{\"id\":\"pay_1\",\"status\":\"AUTHORIZED\",\"amount\":1000,\"currency\":\"EUR\",\"customer\":"
                + "\"cus_42\",\"description\":\"Order 1001\",\"createdAt\":\"2026-11-21T15:00:00Z\","
                + "\"metadata\":{}}").getBytes(StandardCharsets.UTF_8), false);
        private final String replayKey;
        private final String redisPrefix;
        private final String schema;
        private long filled;
        private long baseBytes;
        /** The last key number before the measurement under way. */
        private long measuredFrom;

        Target(String store) {
            this.store = store;
            redisPrefix = store.equals("redis") ? "growth:" + runId.substring(0, 8) + ":" : null;
            schema = store.equals("postgres") ? TestPostgres.newSchema() : null;
            Map<String, Object> props = new HashMap<>(StoreFill.settings(store, redisPrefix, schema));
            if (store.equals("memory")) {
                props.put("idempotency.store.memory.max-entries", String.valueOf(MEMORY_MAX * 2));
                props.put("idempotency.store.memory.max-bytes", "4GB");
            }
            context = ApplicationContext.run(props);
            records = context.getBean(IdempotencyStore.class);
            replayKey = key();
            acquireAndComplete(replayKey);
            baseBytes = bytes();
        }

        private String key() {
            return HexFormat.of().formatHex(sha256(runId + ":" + sequence.incrementAndGet()));
        }

        private void acquireAndComplete(String key) {
            AcquireResult.Acquired a = (AcquireResult.Acquired) records.acquire(key, fingerprint, LEASE)
                .toCompletableFuture().join();
            records.complete(key, a.fencingToken(), response, RETENTION).toCompletableFuture().join();
        }

        /** Adds records up to {@code size}. @return the bytes per record the store reports for them */
        @SuppressWarnings("unchecked")
        String growTo(long size) {
            long started = System.nanoTime();
            switch (store) {
                case "redis" -> StoreFill.redis(context.getBean(StatefulRedisConnection.class), redisPrefix, replayKey,
                    filled + 1, size, RETENTION.toMillis());
                case "postgres" -> StoreFill.postgres(schema, replayKey, filled + 1, size, RETENTION.toMillis());
                default -> {
                    for (long i = filled; i < size; i++) {
                        acquireAndComplete(key());
                    }
                }
            }
            filled = size;
            System.out.printf("[fill] %s: %,d records after %.1f s%n", store, size, (System.nanoTime() - started) / 1e9);
            return String.format(Locale.ROOT, "%,d", (bytes() - baseBytes) / size);
        }

        @SuppressWarnings("unchecked")
        private long bytes() {
            return switch (store) {
                case "redis" -> StoreFill.redisMemory(context.getBean(StatefulRedisConnection.class));
                case "postgres" -> StoreFill.postgresBytes(DelegatingDataSource.unwrapDataSource(
                    context.getBean(DataSource.class)), schema);
                default -> records instanceof InMemoryIdempotencyStore m ? m.bytes() : 0;
            };
        }

        /**
         * {@code callers} threads for {@code each}: every one acquires and completes new keys and replays
         * the replay record, turn about, each call timed alone. The new keys are kept for a second only, and
         * {@link #forgetMeasured} takes them out, so that every measurement sees the fill's count of records.
         *
         * @return p50, p99 of acquire, of complete, of replay, in ns
         */
        long[] measure(int callers, Duration each) throws InterruptedException {
            measuredFrom = sequence.get();
            List<long[]> acquires = new ArrayList<>();
            List<long[]> completes = new ArrayList<>();
            List<long[]> replays = new ArrayList<>();
            CountDownLatch done = new CountDownLatch(callers);
            long warmEnd = System.nanoTime() + Duration.ofSeconds(1).toNanos();
            long end = warmEnd + each.toNanos();
            for (int c = 0; c < callers; c++) {
                int capacity = 3_000_000 / callers;
                long[] acq = new long[capacity];
                long[] com = new long[capacity];
                long[] rep = new long[capacity];
                acquires.add(acq);
                completes.add(com);
                replays.add(rep);
                Thread t = new Thread(() -> {
                    int n = 0;
                    try {
                        while (System.nanoTime() < end && n < acq.length - 1) {
                            String key = key();
                            long t0 = System.nanoTime();
                            AcquireResult.Acquired a = (AcquireResult.Acquired) records.acquire(key, fingerprint, LEASE)
                                .toCompletableFuture().join();
                            long t1 = System.nanoTime();
                            records.complete(key, a.fencingToken(), response, MEASURED).toCompletableFuture().join();
                            long t2 = System.nanoTime();
                            records.acquire(replayKey, fingerprint, LEASE).toCompletableFuture().join();
                            long t3 = System.nanoTime();
                            if (t0 >= warmEnd) {
                                acq[n] = t1 - t0;
                                com[n] = t2 - t1;
                                rep[n] = t3 - t2;
                                n++;
                            }
                        }
                    } finally {
                        acq[acq.length - 1] = n; // how many were kept
                        com[com.length - 1] = n;
                        rep[rep.length - 1] = n;
                        done.countDown();
                    }
                }, "growth-caller-" + c);
                t.start();
            }
            done.await();
            long[] a = percentiles(acquires);
            long[] c = percentiles(completes);
            long[] r = percentiles(replays);
            return new long[] {a[0], a[1], c[0], c[1], r[0], r[1]};
        }

        /** Waits until the measured keys expired and are gone: the store holds the fill (and the replay record) again. */
        @SuppressWarnings("unchecked")
        void forgetMeasured() throws InterruptedException {
            Thread.sleep(MEASURED.toMillis() + 100);
            switch (store) {
                case "redis" -> {
                    // Redis's active expiry samples keys at random: among millions of living ones it takes long to find
                    // these, so they are unlinked by name (the keys are numbered, see key())
                    StatefulRedisConnection<String, String> redis = context.getBean(StatefulRedisConnection.class);
                    List<String> names = new ArrayList<>();
                    for (long n = measuredFrom + 1; n <= sequence.get(); n++) {
                        names.add(redisPrefix + "{" + HexFormat.of().formatHex(sha256(runId + ":" + n)) + "}");
                        if (names.size() == 1000) {
                            redis.sync().unlink(names.toArray(String[]::new));
                            names.clear();
                        }
                    }
                    if (!names.isEmpty()) {
                        redis.sync().unlink(names.toArray(String[]::new));
                    }
                }
                case "postgres" -> {
                    String table = schema + ".idempotency_records";
                    TestPostgres.execute("DELETE FROM " + table + " WHERE expires_at < now() + interval '1 hour'");
                    TestPostgres.execute("VACUUM " + table);
                }
                default -> {
                    if (records instanceof InMemoryIdempotencyStore m) {
                        m.purgeExpired();
                    }
                }
            }
        }

        private static long[] percentiles(List<long[]> perCaller) {
            int total = 0;
            for (long[] x : perCaller) {
                total += (int) x[x.length - 1];
            }
            long[] all = new long[total];
            int at = 0;
            for (long[] x : perCaller) {
                int n = (int) x[x.length - 1];
                System.arraycopy(x, 0, all, at, n);
                at += n;
            }
            Arrays.sort(all);
            if (all.length == 0) {
                return new long[] {0, 0};
            }
            return new long[] {all[all.length / 2], all[(int) Math.min(all.length - 1, all.length * 0.99)]};
        }

        @Override
        public void close() {
            context.close();
            if (schema != null) {
                TestPostgres.dropSchema(schema);
            }
            if (redisPrefix != null) {
                TestRedis.deleteKeys(redisPrefix);
            }
        }
    }

    private static byte[] sha256(String s) {
        try {
            return MessageDigest.getInstance("SHA-256").digest(s.getBytes(StandardCharsets.UTF_8));
        } catch (java.security.NoSuchAlgorithmException e) {
            throw new IllegalStateException(e);
        }
    }
}
