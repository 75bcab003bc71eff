package dev.idempotency.benchmarks.load;

import dev.idempotency.testsupport.RedisWire;
import dev.idempotency.testsupport.TestPostgres;
import dev.idempotency.testsupport.TestRedis;

import java.net.URI;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.LocalDate;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Collections;
import java.util.Comparator;
import java.util.EnumMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.UUID;

import static dev.idempotency.benchmarks.load.LoadStatistics.cpuMicros;
import static dev.idempotency.benchmarks.load.LoadStatistics.kilobytes;
import static dev.idempotency.benchmarks.load.LoadStatistics.median;
import static dev.idempotency.benchmarks.load.LoadStatistics.medianDifference;
import static dev.idempotency.benchmarks.load.LoadStatistics.medianRatio;
import static dev.idempotency.benchmarks.load.LoadStatistics.micros;
import static dev.idempotency.benchmarks.load.LoadStatistics.microsPerRequest;
import static dev.idempotency.benchmarks.load.LoadStatistics.paired;
import static dev.idempotency.benchmarks.load.LoadStatistics.perRequest;
import static dev.idempotency.benchmarks.load.LoadStatistics.roundsDisagree;
import static dev.idempotency.benchmarks.load.LoadStatistics.signed;
import static dev.idempotency.benchmarks.load.LoadStatistics.slowBaseline;

/**
 * The end-to-end load benchmark (issue 9): for each store it starts the echo service
 * ({@link LoadApp}) in a JVM of its own, and drives, with wrk and in the same run, the route
 * under the filter with a new key per request and with one key repeated (replays), each against
 * its baseline, the same requests sent to the same route without the filter, and the new-key
 * requests under {@link FloorFilter} too (the least any non-blocking filter that reads the body
 * costs, so the idempotency filter's own share can be told from Micronaut's; on Redis also under
 * {@link StoreFloorFilter}, which adds the store's two round trips from the event loop; in memory
 * under {@link WorkFloorFilter}, which adds a fixed amount of CPU work), at {@code -c32 -t2}
 * and at one connection; it reads the service's CPU time per request from {@code /proc}, and
 * measures the stores' own ceilings in the same run too (PostgreSQL: pgbench's single-row upsert
 * commit rate at 16 clients; Redis: one connection's PING round trip). The measured runs repeat
 * in rounds, each round running every configuration once (each round starting one configuration
 * further along), and each figure is the median over the
 * rounds (the ratio is the median of each round's ratio to that round's baseline). The runs at
 * one connection come after the loaded ones, in more and shorter rounds of their own, and an
 * added latency is the median of the rounds' differences of p50. It prints a table of req/s,
 * p50, p99, the service's CPU time and heap allocation per request and the ratio to the
 * baseline, followed by notes (among them the CPU per request by thread group, {@link ProcCpu},
 * a caution when the route without the filter ran slow, {@link #slowBaseline}, and one when the
 * rounds disagree, {@link #roundsDisagree}),
 * and writes it to
 * {@code benchmarks/load/target/load-results.md}.
 *
 * <p>Arguments (all optional): {@code --stores=memory,redis,postgres}, {@code --seconds=10}
 * (per measured run), {@code --rounds=3}, {@code --warmup=5} (seconds per warm-up run; a
 * configuration is warmed up until two runs in a row are within 5% in req/s, at most 12 runs),
 * {@code --connections=32}, {@code --threads=2}, {@code --latency-rounds=8} and {@code --latency-seconds=2}
 * (the runs at one connection); {@code --prop.<name>=<value>} sets a property of the service (e.g.
 * {@code --prop.idempotency.store.memory.max-entries=1000000}) and {@code --jvm=<flags>} adds
 * JVM flags to it (space-separated, e.g. a JFR recording). Redis and PostgreSQL are the configured ones when they answer
 * ({@code IDEMPOTENCY_TEST_REDIS_URI}, {@code IDEMPOTENCY_TEST_POSTGRES_URL}, defaults on
 * 127.0.0.1), else ones started for the run. Needs {@code wrk} (and {@code pgbench} for the
 * PostgreSQL ceiling) on the PATH; {@code benchmarks/load/run} installs wrk when it is missing.
 */
public final class LoadBenchmark {


    /** Warm-up runs of a configuration end when two in a row are this close in req/s ... */
    private static final double WARM = 0.05;
    /** ... or after this many. */
    private static final int MAX_WARMUP_RUNS = 12;
    /** The property that gives a Redis run's records a prefix of their own. */
    static final String REDIS_PREFIX = "idempotency.store.redis.key-prefix";
    /** Above this ratio of the floor to the route without the filter, that route ran slow (see {@link #slowBaseline}). */
    static final double SLOW_BASELINE = 1.05;
    /**
     * Beyond this difference between a configuration's median ratio and the ratio of its req/s
     * median to its baseline's, the rounds disagree (see {@link #roundsDisagree}).
     */
    static final double ROUNDS_DISAGREE = 0.05;

    private final Map<String, String> options;
    private final int seconds;
    private final int warmup;
    private final int connections;
    private final int threads;
    private final int rounds;
    private final int latencyRounds;
    private final int latencySeconds;
    private final Wrk wrk;
    /** The CPU work of the work floor, µs per request, as the service is told it. */
    private final String workFloorMicros;
    private final StringBuilder report = new StringBuilder();

    private LoadBenchmark(Map<String, String> options, Path work) {
        this.options = options;
        this.seconds = Integer.parseInt(options.getOrDefault("seconds", "10"));
        this.warmup = Integer.parseInt(options.getOrDefault("warmup", "5"));
        this.connections = Integer.parseInt(options.getOrDefault("connections", "32"));
        this.threads = Integer.parseInt(options.getOrDefault("threads", "2"));
        this.rounds = Integer.parseInt(options.getOrDefault("rounds", "3"));
        this.latencyRounds = Integer.parseInt(options.getOrDefault("latency-rounds", "8"));
        this.latencySeconds = Integer.parseInt(options.getOrDefault("latency-seconds", "2"));
        this.wrk = new Wrk(work);
        this.workFloorMicros = options.getOrDefault("prop." + WorkFloorFilter.MICROS_PROPERTY,
            WorkFloorFilter.DEFAULT_MICROS);
    }

    public static void main(String[] args) throws Exception {
        Map<String, String> options = options(args);
        if (!Wrk.available()) {
            System.err.println("wrk is not on the PATH. Install it (Debian/Ubuntu: apt-get install -y wrk) or run"
                + " benchmarks/load/run, which does.");
            System.exit(2);
        }
        Path out = Path.of(options.getOrDefault("out", "benchmarks/load/target/load-results.md"));
        Files.createDirectories(out.toAbsolutePath().getParent());
        Path work = Files.createTempDirectory("idempotency-load");
        LoadBenchmark benchmark = new LoadBenchmark(options, work);
        benchmark.run(List.of(options.getOrDefault("stores", "memory,redis,postgres").split(",")));
        Files.writeString(out, benchmark.report.toString(), StandardCharsets.UTF_8);
        System.out.println("\nwritten to " + out.toAbsolutePath());
        System.exit(0);
    }

    private void run(List<String> stores) throws Exception {
        line("# Load benchmark, " + LocalDate.now() + ", " + Runtime.getRuntime().availableProcessors()
            + " CPUs, Java " + System.getProperty("java.version") + ", wrk -t" + threads + " -c" + connections
            + " -d" + seconds + "s, warm-up per configuration in runs of " + warmup + " s until req/s settles, median of "
            + rounds
            + " interleaved rounds; latency at one connection: wrk -t1 -c1 -d" + latencySeconds + "s, "
            + latencyRounds + " interleaved rounds");
        line("");
        line("| store | configuration | req/s | p50 | p99 | service CPU per request | service heap allocated per request"
            + " | ratio to no filter | errors |");
        line("|---|---|---:|---:|---:|---:|---:|---:|---:|");
        List<String> notes = new ArrayList<>();
        for (String store : stores) {
            notes.addAll(runStore(store.trim()));
        }
        line("");
        notes.forEach(this::line);
    }

    /**
     * @return the configurations in the order round {@code round} runs them: each round starts one
     *     further along, so no configuration always runs first (after the previous round's last, or
     *     the warm-up) and whatever that position costs or spares is spread over all of them
     */
    static List<Wrk.Kind> inRound(List<Wrk.Kind> kinds, int round) {
        List<Wrk.Kind> order = new ArrayList<>(kinds);
        Collections.rotate(order, -(round % Math.max(1, kinds.size())));
        return order;
    }

    /** @return the {@code --name=value} arguments as {@code name -> value} */
    static Map<String, String> options(String[] args) {
        Map<String, String> options = new LinkedHashMap<>();
        for (String a : args) {
            if (a.startsWith("--") && a.contains("=")) {
                options.put(a.substring(2, a.indexOf('=')), a.substring(a.indexOf('=') + 1));
            }
        }
        return options;
    }

    /** Puts the {@code --prop.<name>=<value>} options into {@code props}, over what is there. */
    static void putServiceProperties(Map<String, String> options, Map<String, String> props) {
        options.forEach((k, v) -> {
            if (k.startsWith("prop.")) {
                props.put(k.substring(5), v);
            }
        });
    }

    /** @return the lines to print after the table */
    private List<String> runStore(String store) throws Exception {
        List<String> notes = new ArrayList<>();
        Map<String, String> props = new LinkedHashMap<>();
        String runId = UUID.randomUUID().toString().substring(0, 8);
        double ceiling = Double.NaN;
        double redisRoundTrip = Double.NaN;
        URI redisServer = null; // where INFO commandstats is read, for Redis
        long storeServer = -1; // the store's server process, when it runs on this machine and can be found
        String schema = null;
        switch (store) {
            case "memory" -> {
            }
            case "redis" -> {
                props.put("redis.uri", TestRedis.uri());
                props.put("idempotency.store.redis.enabled", "true");
                props.put(REDIS_PREFIX, "load-" + runId + ":");
                props.put("idempotency.retention", "2m");
                URI redis = URI.create(TestRedis.uri());
                redisRoundTrip = StoreFloors.redisRoundTripMicros(redis, 20_000);
                redisServer = redis;
                storeServer = ProcCpu.find("redis-server", ":" + RedisWire.port(redis));
            }
            case "postgres" -> {
                TestPostgres.Server pg = TestPostgres.server();
                schema = TestPostgres.newSchema();
                TestPostgres.properties(pg, schema).forEach((k, v) -> props.put(k, String.valueOf(v)));
                props.remove("datasources.default.maximum-pool-size"); // HikariCP's default, as an application has
                props.put("idempotency.retention", "2m");
                ceiling = StoreFloors.pgbenchUpsertCommits(pg, schema, seconds);
            }
            default -> throw new IllegalArgumentException("unknown store " + store + "; use memory, redis or postgres");
        }
        if (!store.equals("redis")) {
            props.put("idempotency.store.redis.enabled", "false");
        }
        putServiceProperties(options, props);
        List<String> jvm = options.containsKey("jvm") ? List.of(options.get("jvm").trim().split("\\s+")) : List.of();
        try (LoadService service = LoadService.start(props, jvm)) {
            String base = "http://127.0.0.1:" + service.port;
            // each replay run gets a key of its own, stored just before it: a record older than the
            // retention would expire during the run, and one stored before new keys had filled the
            // in-memory store would be evicted; either way its first request would run again, and
            // the duplicates that came while it ran would be answered 409
            String replayKey = "replay-" + runId + "-warm";
            // the store floor only where a target is stated in the store's round trips (Redis); the
            // work floor only in memory, where the filter's cost is all its own work
            List<Wrk.Kind> kinds = Arrays.stream(Wrk.Kind.values())
                .filter(k -> k != Wrk.Kind.STORE_FLOOR || store.equals("redis"))
                .filter(k -> k != Wrk.Kind.WORK_FLOOR || store.equals("memory"))
                .filter(k -> k.baseline() != Wrk.Kind.TRACED_BASELINE_NEW).toList(); // TracingLatency's
            // the JIT takes tens of seconds of load to compile the filter's path on two cores (its
            // first seconds run at a tenth of its speed): each configuration is warmed up until its
            // req/s settles, so the rounds measure the steady state, not the compiler
            List<String> warmed = new ArrayList<>();
            for (Wrk.Kind kind : kinds) {
                if (kind == Wrk.Kind.REPLAYS) {
                    service.prime(replayKey);
                }
                double previous = 0;
                for (int run = 1; ; run++) {
                    double rps = wrk.run(base, kind, key(kind, runId + "-warm" + run, replayKey), threads, connections,
                        warmup).requestsPerSecond();
                    if (run == MAX_WARMUP_RUNS || (run > 1 && Math.abs(rps - previous) <= WARM * previous)) {
                        warmed.add(label(kind) + " " + run * warmup + " s");
                        break;
                    }
                    previous = rps;
                }
            }
            notes.add("- " + store + " warm-up until req/s settled (two runs in a row within "
                + Math.round(WARM * 100) + "%): " + String.join(", ", warmed));
            // rounds interleave the configurations, so a slow spell of the machine hits all of them
            Map<Wrk.Kind, List<Wrk.Result>> loaded = new EnumMap<>(Wrk.Kind.class);
            Map<Wrk.Kind, List<Double>> cpu = new EnumMap<>(Wrk.Kind.class);
            Map<Wrk.Kind, List<Double>> heap = new EnumMap<>(Wrk.Kind.class);
            Map<Wrk.Kind, Map<ProcCpu.Group, List<Double>>> cpuByThreads = new EnumMap<>(Wrk.Kind.class);
            Map<Wrk.Kind, List<Double>> storeServerCpu = new EnumMap<>(Wrk.Kind.class);
            Map<Wrk.Kind, List<Map<String, RedisCommandStats.Totals>>> redisCommands = new EnumMap<>(Wrk.Kind.class);
            for (int round = 0; round < rounds; round++) {
                for (Wrk.Kind kind : inRound(kinds, round)) {
                    if (kind == Wrk.Kind.REPLAYS) {
                        replayKey = "replay-" + runId + "-c" + round;
                        service.prime(replayKey);
                    }
                    long cpuBefore = service.cpuNanos();
                    Map<ProcCpu.Group, Long> threadsBefore = service.cpuNanosByThreadGroup();
                    long heapBefore = service.allocatedBytes();
                    // the INFO readings outside the store server's CPU readings, so they do not count in it
                    Map<String, RedisCommandStats.Totals> commandsBefore = redisServer == null ? null
                        : RedisCommandStats.read(redisServer);
                    long storeBefore = storeServer < 0 ? -1 : ProcCpu.process(storeServer);
                    Wrk.Result r = wrk.run(base, kind, key(kind, runId + "-c" + round, replayKey), threads, connections,
                        seconds);
                    if (storeServer >= 0) {
                        storeServerCpu.computeIfAbsent(kind, k -> new ArrayList<>()).add(
                            perRequest(storeBefore, ProcCpu.process(storeServer), r) / 1000);
                    }
                    if (commandsBefore != null) {
                        redisCommands.computeIfAbsent(kind, k -> new ArrayList<>()).add(
                            RedisCommandStats.between(commandsBefore, RedisCommandStats.read(redisServer)));
                    }
                    loaded.computeIfAbsent(kind, k -> new ArrayList<>()).add(r);
                    cpu.computeIfAbsent(kind, k -> new ArrayList<>()).add(
                        perRequest(cpuBefore, service.cpuNanos(), r) / 1000);
                    heap.computeIfAbsent(kind, k -> new ArrayList<>()).add(
                        perRequest(heapBefore, service.allocatedBytes(), r));
                    Map<ProcCpu.Group, Long> threadsAfter = service.cpuNanosByThreadGroup();
                    Map<ProcCpu.Group, List<Double>> groups = cpuByThreads.computeIfAbsent(kind,
                        k -> new EnumMap<>(ProcCpu.Group.class));
                    for (ProcCpu.Group group : ProcCpu.Group.values()) {
                        groups.computeIfAbsent(group, g -> new ArrayList<>())
                            .add(microsPerRequest(threadsBefore, threadsAfter, group, r));
                    }
                }
            }
            // latency at one connection: short runs in many interleaved rounds, and each figure the
            // median of the rounds' differences, so a slow spell of the machine cancels out
            Map<Wrk.Kind, List<Wrk.Result>> single = new EnumMap<>(Wrk.Kind.class);
            for (int round = 0; round < latencyRounds; round++) {
                for (Wrk.Kind kind : inRound(kinds, round)) {
                    if (kind == Wrk.Kind.REPLAYS) {
                        replayKey = "replay-" + runId + "-1-" + round;
                        service.prime(replayKey);
                    }
                    single.computeIfAbsent(kind, k -> new ArrayList<>()).add(
                        wrk.run(base, kind, key(kind, runId + "-1-" + round, replayKey), 1, 1, latencySeconds));
                }
            }
            String slowBaseline = slowBaseline(store, loaded);
            for (Map.Entry<Wrk.Kind, List<Wrk.Result>> e : loaded.entrySet()) {
                List<Wrk.Result> runs = e.getValue();
                double ratio = medianRatio(loaded, e.getKey(), e.getKey().baseline());
                // a ratio to a baseline that ran slow is shown in brackets: it overstates
                String shown = String.format(Locale.ROOT, slowBaseline != null
                    && e.getKey().baseline() == Wrk.Kind.BASELINE_NEW && !e.getKey().isBaseline() ? "(%.2f)" : "%.2f", ratio);
                line(String.format(Locale.ROOT, "| %s | %s | %,.0f | %s | %s | %s | %s | %s | %d |", store,
                    label(e.getKey()), median(runs, Wrk.Result::requestsPerSecond),
                    micros(median(runs, Wrk.Result::p50Micros)), micros(median(runs, Wrk.Result::p99Micros)),
                    micros(median(cpu.get(e.getKey()))), kilobytes(median(heap.get(e.getKey()))), shown,
                    runs.stream().mapToLong(Wrk.Result::failures).sum()));
            }
            if (slowBaseline != null) {
                notes.add(slowBaseline);
            }
            notes.add(roundRatios(store, loaded));
            String disagreement = roundsDisagree(store, loaded, this::label);
            if (disagreement != null) {
                notes.add(disagreement);
            }
            notes.add(cpuByThreads(store, cpuByThreads));
            if (!storeServerCpu.isEmpty()) {
                notes.add(storeServerCpu(store, storeServerCpu));
            }
            if (!redisCommands.isEmpty()) {
                notes.add(redisCommands(store, redisCommands, loaded));
            }
            double singleNewBase = median(single.get(Wrk.Kind.BASELINE_NEW), Wrk.Result::p50Micros);
            double singleNew = median(single.get(Wrk.Kind.NEW_KEYS), Wrk.Result::p50Micros);
            double singleFloor = median(single.get(Wrk.Kind.FLOOR), Wrk.Result::p50Micros);
            double addedNew = medianDifference(single, Wrk.Kind.NEW_KEYS, Wrk.Kind.BASELINE_NEW);
            double addedFloor = medianDifference(single, Wrk.Kind.FLOOR, Wrk.Kind.BASELINE_NEW);
            double singleReplayBase = median(single.get(Wrk.Kind.BASELINE_REPLAY), Wrk.Result::p50Micros);
            double singleReplay = median(single.get(Wrk.Kind.REPLAYS), Wrk.Result::p50Micros);
            notes.add(String.format(Locale.ROOT, "- %s at one connection (p50, median of %d rounds; added latency: the"
                    + " median of the rounds' differences): new keys %s against %s without the filter (%s), replays %s"
                    + " against %s (%s)", store, latencyRounds, micros(singleNew), micros(singleNewBase), signed(addedNew),
                micros(singleReplay), micros(singleReplayBase),
                signed(medianDifference(single, Wrk.Kind.REPLAYS, Wrk.Kind.BASELINE_REPLAY))));
            notes.add(String.format(Locale.ROOT, "- %s floor (a filter that only copies the body): at one connection %s"
                    + " (%s over no filter; new keys %s over the floor); new keys under the filter reach %.2f of the"
                    + " floor's req/s", store, micros(singleFloor), signed(addedFloor),
                signed(medianDifference(single, Wrk.Kind.NEW_KEYS, Wrk.Kind.FLOOR)),
                medianRatio(loaded, Wrk.Kind.NEW_KEYS, Wrk.Kind.FLOOR)));
            if (loaded.containsKey(Wrk.Kind.WORK_FLOOR)) {
                notes.add(String.format(Locale.ROOT, "- %s work floor (the floor plus %s µs of CPU work on the event loop):"
                        + " %.2f of no filter's req/s at %s of service CPU per request (the floor %s, no filter %s); the"
                        + " filter's new keys reach %.2f of its req/s. At one connection %s over no filter (new keys %s"
                        + " over it)", store, workFloorMicros,
                    medianRatio(loaded, Wrk.Kind.WORK_FLOOR, Wrk.Kind.BASELINE_NEW),
                    cpuMicros(median(cpu.get(Wrk.Kind.WORK_FLOOR))), cpuMicros(median(cpu.get(Wrk.Kind.FLOOR))),
                    cpuMicros(median(cpu.get(Wrk.Kind.BASELINE_NEW))),
                    medianRatio(loaded, Wrk.Kind.NEW_KEYS, Wrk.Kind.WORK_FLOOR),
                    signed(medianDifference(single, Wrk.Kind.WORK_FLOOR, Wrk.Kind.BASELINE_NEW)),
                    signed(medianDifference(single, Wrk.Kind.NEW_KEYS, Wrk.Kind.WORK_FLOOR))));
            }
            if (!Double.isNaN(redisRoundTrip)) {
                notes.add(String.format(Locale.ROOT, "- redis: one PING round trip (p50, one connection, blocking socket) %s;"
                        + " new keys add %s at one connection, i.e. two round trips %s", micros(redisRoundTrip),
                    micros(addedNew), signed(addedNew - 2 * redisRoundTrip)));
            }
            if (single.containsKey(Wrk.Kind.STORE_FLOOR)) {
                double singleStoreFloor = median(single.get(Wrk.Kind.STORE_FLOOR), Wrk.Result::p50Micros);
                double addedStoreFloor = medianDifference(single, Wrk.Kind.STORE_FLOOR, Wrk.Kind.BASELINE_NEW);
                notes.add(String.format(Locale.ROOT, "- %s store floor (the floor plus two store round trips from the event"
                        + " loop, on the store's own connection): at one connection %s (%s over no filter, so two round"
                        + " trips from the event loop cost %s); new keys add %s over it at one connection and reach %.2f of"
                        + " its req/s", store, micros(singleStoreFloor), signed(addedStoreFloor),
                    micros(medianDifference(single, Wrk.Kind.STORE_FLOOR, Wrk.Kind.FLOOR)),
                    signed(medianDifference(single, Wrk.Kind.NEW_KEYS, Wrk.Kind.STORE_FLOOR)),
                    medianRatio(loaded, Wrk.Kind.NEW_KEYS, Wrk.Kind.STORE_FLOOR)));
            }
            if (!Double.isNaN(ceiling)) {
                notes.add(String.format(Locale.ROOT, "- postgres: pgbench single-row upsert commits at 16 clients: %,.0f/s;"
                        + " new keys reach %.2f of it (two commits each, unbatched: 0.5 would be the limit)", ceiling,
                    median(loaded.get(Wrk.Kind.NEW_KEYS), Wrk.Result::requestsPerSecond) / ceiling));
            }
        } finally {
            if (schema != null) {
                TestPostgres.dropSchema(schema);
            }
            if (store.equals("redis")) {
                // a Redis run leaves hundreds of thousands of records, which would otherwise wait
                // for their TTL (the retention plus the grace) on what may be a shared server
                notes.add("- redis: " + StoreFloors.deleteRecords(props.get("redis.uri"), props.get(REDIS_PREFIX)));
            }
        }
        return notes;
    }

    /**
     * Deletes a run's Redis records: every key under {@code prefix} (SCAN + UNLINK).
     *
     * @return what was done, for the report: how many were deleted, or why none could be (they
     *     then expire by themselves)
     */

    /**
     * @return a note with the CPU per request of the store's own server (for Redis, a local
     *     {@code redis-server}), which shares the machine's cores with the service and wrk: the
     *     median of the rounds
     */
    private String storeServerCpu(String store, Map<Wrk.Kind, List<Double>> byKind) {
        List<String> parts = new ArrayList<>();
        byKind.forEach((kind, values) -> {
            double micros = median(values);
            parts.add(label(kind) + " " + (Double.isNaN(micros) ? "?" : cpuMicros(micros)));
        });
        return "- " + store + " server's own CPU per request (its process on this machine, median of the rounds): "
            + String.join("; ", parts);
    }

    /**
     * @return a note with the time the Redis server spent per request in each command
     *     ({@code INFO commandstats}, read before and after each round): calls and µs per request,
     *     the median of the rounds, commands under 0.01 calls per request left out
     */
    private String redisCommands(String store, Map<Wrk.Kind, List<Map<String, RedisCommandStats.Totals>>> byKind,
                                 Map<Wrk.Kind, List<Wrk.Result>> loaded) {
        List<String> configurations = new ArrayList<>();
        byKind.forEach((kind, rounds) -> {
            List<Wrk.Result> runs = loaded.get(kind);
            // per command, each round's calls and µs per request; a command missing from a round did nothing in it
            Map<String, double[][]> perRound = new LinkedHashMap<>();
            for (int round = 0; round < rounds.size(); round++) {
                Wrk.Result run = runs.get(round);
                for (Map.Entry<String, RedisCommandStats.Totals> e : rounds.get(round).entrySet()) {
                    double[][] v = perRound.computeIfAbsent(e.getKey(), c -> new double[2][rounds.size()]);
                    v[0][round] = perRequest(0, e.getValue().calls(), run);
                    v[1][round] = perRequest(0, e.getValue().micros(), run);
                }
            }
            record Command(String name, double calls, double micros) {
            }
            List<String> parts = perRound.entrySet().stream()
                .map(e -> new Command(e.getKey(), median(e.getValue()[0]), median(e.getValue()[1])))
                .filter(c -> c.calls() >= 0.01)
                .sorted(Comparator.comparingDouble(Command::micros).reversed())
                .map(c -> String.format(Locale.ROOT, "%s %.2f× %s", c.name(), c.calls(), cpuMicros(c.micros())))
                .toList();
            configurations.add(label(kind) + ": " + (parts.isEmpty() ? "none" : String.join(", ", parts)));
        });
        return "- " + store + " server's time per request by command (INFO commandstats, calls and µs per request,"
            + " median of the rounds; a script's own commands count under their names and in the script's time): "
            + String.join("; ", configurations);
    }

    /**
     * @return a note with where each configuration's service CPU per request goes, by thread
     *     group (see {@link ProcCpu}), the median of the rounds; groups under 0.1 µs left out, a
     *     group whose rounds could not tell (a thread of it ended) shown as {@code ?}
     */
    private String cpuByThreads(String store, Map<Wrk.Kind, Map<ProcCpu.Group, List<Double>>> byKind) {
        List<String> configurations = new ArrayList<>();
        byKind.forEach((kind, groups) -> {
            List<String> parts = new ArrayList<>();
            groups.forEach((group, values) -> {
                double micros = median(values);
                if (Double.isNaN(micros)) {
                    parts.add(group.label + " ?");
                } else if (micros >= 0.1) {
                    parts.add(group.label + " "
                        + cpuMicros(micros));
                }
            });
            configurations.add(label(kind) + ": " + (parts.isEmpty() ? "-" : String.join(", ", parts)));
        });
        return "- " + store + " service CPU per request by thread (median of the rounds): "
            + String.join("; ", configurations);
    }

    /**
     * @return a note with each round's ratio of every configuration to its baseline, in the order the
     *     rounds ran: a slow spell that hit one configuration of a round shows as one ratio out of line
     *     with the others, which the median hides
     */
    private String roundRatios(String store, Map<Wrk.Kind, List<Wrk.Result>> loaded) {
        List<String> parts = new ArrayList<>();
        for (Wrk.Kind kind : loaded.keySet()) {
            if (!kind.isBaseline()) {
                List<String> ratios = new ArrayList<>();
                for (double ratio : paired(loaded, kind, kind.baseline(), LoadStatistics::ratio)) {
                    ratios.add(String.format(Locale.ROOT, "%.2f", ratio));
                }
                parts.add(label(kind) + " " + String.join(", ", ratios));
            }
        }
        return "- " + store + " ratio to no filter in each round: " + String.join("; ", parts);
    }

    private static String key(Wrk.Kind kind, String prefix, String replayKey) {
        return kind.baseline() == Wrk.Kind.BASELINE_REPLAY ? replayKey : prefix;
    }

    private String label(Wrk.Kind kind) {
        return switch (kind) {
            case BASELINE_NEW -> "no filter (a new key per request)";
            case NEW_KEYS -> "filter, new keys";
            case FLOOR -> "floor: a filter that only copies the body (new keys)";
            case STORE_FLOOR -> "store floor: the floor plus two store round trips (new keys)";
            case WORK_FLOOR -> "work floor: the floor plus " + workFloorMicros + " µs of CPU work (new keys)";
            case BASELINE_REPLAY -> "no filter (one key)";
            case REPLAYS -> "filter, replays";
            case TRACED_BASELINE_NEW -> "no filter, traced (a new key per request)";
            case TRACED_NEW_KEYS -> "filter, traced, new keys";
        };
    }

    private void line(String s) {
        System.out.println(s);
        report.append(s).append('\n');
    }


}
