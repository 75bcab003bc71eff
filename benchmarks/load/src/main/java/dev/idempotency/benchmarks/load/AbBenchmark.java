package dev.idempotency.benchmarks.load;

import dev.idempotency.testsupport.TestRedis;

import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.LocalDate;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.UUID;

/**
 * Two builds of the service compared under the same load, in one run: for changes of a few
 * percent, which the hour-to-hour drift of a shared machine hides when two runs of
 * {@link LoadBenchmark} minutes apart are compared.
 *
 * <p>Both services ({@link LoadApp} with the in-memory store, one from each build's classes)
 * run side by side, idle but for the one being measured. After a warm-up of each, the run
 * alternates them: {@code --pairs} pairs of {@code --seconds} runs of the same wrk load
 * ({@code -t2 -c32}), A then B in even pairs and B then A in odd ones, so a drift during the run
 * weighs on both sides alike. Each pair gives B's req/s over A's and the difference of their
 * service CPU per request (process and event loops); the report is the median over the pairs
 * with the spread, and every pair.
 *
 * <p>B, started and warmed up second, had an edge of its own on this kind of machine (2026-11-26:
 * in six one-pass runs it won 92 of 144 pairs, whichever build it was). So by default the run
 * makes two passes of {@code --pairs} pairs with fresh services, started and warmed up A first in
 * the first pass and B first in the second: over both passes, an edge that comes with the start
 * order cancels. (A control run afterwards did not settle that the order is the whole cause.)
 * {@code --passes=1} makes the one pass, A started first.
 *
 * <p>Options: {@code --a=} and {@code --b=} the classpaths (a build's
 * {@code load-benchmark.jar}; B defaults to this benchmark's own), {@code --kind=} the
 * configuration ({@link Wrk.Kind}, default {@code NEW_KEYS}), {@code --pairs=} per pass (10),
 * {@code --passes=} (2),
 * {@code --seconds=} (5), {@code --warmup=} seconds of load per service before the pairs (40),
 * {@code --prop.<name>=<value>} a service property for both, {@code --a.prop.<name>=<value>} and
 * {@code --b.prop.<name>=<value>} one side's own (which override the common ones), {@code --a.jvm=}
 * and {@code --b.jvm=} one side's JVM flags, {@code --out=} where to write the report (default
 * {@code benchmarks/load/target/ab-results.md}). With the same build on both sides and a
 * property or flag on one, the run measures what a setting costs.
 */
public final class AbBenchmark {

    private AbBenchmark() {
    }

    /** One side's figures in one pair. */
    record Side(double requestsPerSecond, double cpuMicrosPerRequest, double eventLoopMicrosPerRequest) {
    }

    /**
     * The pairs, summarized: medians over the pairs, the extremes of the req/s ratio, in how many
     * pairs B was faster and slower, and how likely at least so lopsided a count is when the two
     * builds are the same (a two-sided sign test: ties left out, each other pair a coin toss).
     */
    record Summary(double medianRatio, double minRatio, double maxRatio, double medianCpuDifference,
                   double medianEventLoopDifference, int faster, int slower, double signTestP) {
    }

    /**
     * @param a A's figures, one per pair
     * @param b B's figures, in the same order
     * @return B against A: the median, lowest and highest of B's req/s over A's, and the medians of
     *     B's CPU per request minus A's (the whole process, the event loops)
     */
    static Summary summarize(List<Side> a, List<Side> b) {
        if (a.size() != b.size() || a.isEmpty()) {
            throw new IllegalArgumentException("one figure per side and pair, at least one pair");
        }
        int n = a.size();
        double[] ratios = new double[n];
        double[] cpu = new double[n];
        double[] loops = new double[n];
        double min = Double.POSITIVE_INFINITY;
        double max = Double.NEGATIVE_INFINITY;
        int faster = 0;
        int slower = 0;
        for (int i = 0; i < n; i++) {
            ratios[i] = b.get(i).requestsPerSecond() / a.get(i).requestsPerSecond();
            faster += ratios[i] > 1 ? 1 : 0;
            slower += ratios[i] < 1 ? 1 : 0;
            min = Math.min(min, ratios[i]);
            max = Math.max(max, ratios[i]);
            cpu[i] = b.get(i).cpuMicrosPerRequest() - a.get(i).cpuMicrosPerRequest();
            loops[i] = b.get(i).eventLoopMicrosPerRequest() - a.get(i).eventLoopMicrosPerRequest();
        }
        return new Summary(LoadStatistics.median(ratios), min, max, LoadStatistics.median(cpu),
            LoadStatistics.median(loops), faster, slower, signTest(faster, slower));
    }

    /**
     * @return the two-sided p-value of {@code k} successes against {@code m} failures when each is
     *     equally likely: twice the probability of a count at least as far from the middle, at most 1
     */
    static double signTest(int k, int m) {
        int n = k + m;
        if (n == 0) {
            return 1;
        }
        int extreme = Math.min(k, m);
        double tail = 0;
        double choose = 1; // C(n, 0)
        for (int i = 0; i <= extreme; i++) {
            tail += choose;
            choose = choose * (n - i) / (i + 1);
        }
        return Math.min(1, 2 * tail / Math.pow(2, n));
    }

    public static void main(String[] args) throws Exception {
        Map<String, String> options = LoadBenchmark.options(args);
        Map<String, String> props = new LinkedHashMap<>();
        props.put("idempotency.store.redis.enabled", "false");
        LoadBenchmark.putServiceProperties(options, props);
        if (!options.containsKey("a")) {
            System.err.println("--a=<classpath of build A, e.g. its benchmarks/load/target/load-benchmark.jar> is required");
            System.exit(2);
        }
        if (!Wrk.available()) {
            System.err.println("wrk is not on the PATH. Install it (Debian/Ubuntu: apt-get install -y wrk).");
            System.exit(2);
        }
        String classpathA = options.get("a");
        String classpathB = options.getOrDefault("b", System.getProperty("java.class.path"));
        Wrk.Kind kind = Wrk.Kind.valueOf(options.getOrDefault("kind", "NEW_KEYS"));
        int pairs = Integer.parseInt(options.getOrDefault("pairs", "10"));
        int seconds = Integer.parseInt(options.getOrDefault("seconds", "5"));
        int warmup = Integer.parseInt(options.getOrDefault("warmup", "40"));
        int passes = Integer.parseInt(options.getOrDefault("passes", "2"));
        if (passes < 1) {
            System.err.println("--passes must be 1 or more, was " + passes);
            System.exit(2);
        }
        Path out = Path.of(options.getOrDefault("out", "benchmarks/load/target/ab-results.md"));

        Wrk wrk = new Wrk(Files.createTempDirectory("idempotency-ab"));
        String run = UUID.randomUUID().toString().substring(0, 8);
        List<Side> sideA = new ArrayList<>();
        List<Side> sideB = new ArrayList<>();
        Map<String, String> propsA = sideProperties(options, "a", props);
        Map<String, String> propsB = sideProperties(options, "b", props);
        List<Map<String, String>> onRedis = redisSides(run, propsA, propsB);
        Build a = new Build(classpathA, propsA, jvmFlags(options, "a"));
        Build b = new Build(classpathB, propsB, jvmFlags(options, "b"));
        try {
            for (int pass = 0; pass < passes; pass++) {
                runPass(wrk, run + "-" + pass, kind, pairs, seconds, warmup, startsBFirst(pass), a, b, sideA, sideB);
            }
        } finally {
            deleteRecords(onRedis);
        }
        String report = report(describe(classpathA, options, "a"), describe(classpathB, options, "b"), kind, seconds,
            warmup, pairs, sideA, sideB);
        Files.createDirectories(out.toAbsolutePath().getParent());
        Files.writeString(out, report, StandardCharsets.UTF_8);
        System.out.println();
        System.out.println(report);
        System.out.println("written to " + out.toAbsolutePath());
        System.exit(0);
    }

    /**
     * Gives each side that runs on Redis a key prefix of this run's own and a retention of an hour
     * (longer than a pass, so a replay key primed at a pass's start lasts it), unless the options
     * set them: a run makes millions of records, which would otherwise stay a day (the default
     * retention) under the default prefix if the run did not get to delete them.
     *
     * @return the sides' properties that run on Redis
     */
    static List<Map<String, String>> redisSides(String run, Map<String, String> a, Map<String, String> b) {
        List<Map<String, String>> onRedis = new ArrayList<>();
        for (Map<String, String> side : List.of(a, b)) {
            if ("true".equals(side.get("idempotency.store.redis.enabled"))) {
                side.putIfAbsent(LoadBenchmark.REDIS_PREFIX, "ab-" + run + ":");
                side.putIfAbsent("idempotency.retention", "1h");
                onRedis.add(side);
            }
        }
        return onRedis;
    }

    /** Deletes the records the Redis sides made, and says how many. */
    private static void deleteRecords(List<Map<String, String>> onRedis) {
        onRedis.stream()
            .map(p -> List.of(p.getOrDefault("redis.uri", TestRedis.uri()), p.get(LoadBenchmark.REDIS_PREFIX)))
            .distinct()
            .forEach(where -> System.out.println(StoreFloors.deleteRecords(where.get(0), where.get(1))
                + " at " + where.get(0)));
    }

    /** @return whether pass {@code pass} (from 0) starts and warms up B's service first: every second one */
    static boolean startsBFirst(int pass) {
        return pass % 2 == 1;
    }

    /** One build's service as the run starts it: its classpath, properties and JVM flags. */
    private record Build(String classpath, Map<String, String> props, List<String> jvm) {
        LoadService start() throws Exception {
            return LoadService.start(classpath, props, jvm);
        }
    }

    /** One pass: both services started and warmed up (B's first when {@code bFirst}), then {@code pairs} pairs. */
    private static void runPass(Wrk wrk, String run, Wrk.Kind kind, int pairs, int seconds, int warmup, boolean bFirst,
                                Build buildA, Build buildB, List<Side> sideA, List<Side> sideB) throws Exception {
        try (LoadService first = (bFirst ? buildB : buildA).start();
             LoadService second = (bFirst ? buildA : buildB).start()) {
            LoadService a = bFirst ? second : first;
            LoadService b = bFirst ? first : second;
            if (replays(kind)) {
                a.prime("ab-" + run);
                b.prime("ab-" + run);
            }
            for (int done = 0; done < warmup; done += seconds) { // in the order they were started
                measure(wrk, first, kind, key(kind, run, "w1-" + done), seconds);
                measure(wrk, second, kind, key(kind, run, "w2-" + done), seconds);
            }
            for (int i = 0; i < pairs; i++) {
                boolean aFirst = i % 2 == 0;
                Side one = measure(wrk, aFirst ? a : b, kind, key(kind, run, "p" + i + "f"), seconds);
                Side two = measure(wrk, aFirst ? b : a, kind, key(kind, run, "p" + i + "s"), seconds);
                Side x = aFirst ? one : two;
                Side y = aFirst ? two : one;
                sideA.add(x);
                sideB.add(y);
                System.out.printf(Locale.ROOT, "pair %d (%s started first): A %.0f req/s, B %.0f req/s, B/A %.3f%n",
                    sideA.size(), bFirst ? "B" : "A", x.requestsPerSecond(), y.requestsPerSecond(),
                    y.requestsPerSecond() / x.requestsPerSecond());
            }
        }
    }

    /** @return the common service properties with side {@code side}'s own ({@code --a.prop.x=y}) over them */
    static Map<String, String> sideProperties(Map<String, String> options, String side, Map<String, String> common) {
        Map<String, String> props = new LinkedHashMap<>(common);
        String prefix = side + ".prop.";
        options.forEach((k, v) -> {
            if (k.startsWith(prefix)) {
                props.put(k.substring(prefix.length()), v);
            }
        });
        return props;
    }

    /** @return side {@code side}'s JVM flags ({@code --a.jvm="-XX:... -XX:..."}), none by default */
    static List<String> jvmFlags(Map<String, String> options, String side) {
        String flags = options.getOrDefault(side + ".jvm", "").trim();
        return flags.isEmpty() ? List.of() : List.of(flags.split("\\s+"));
    }

    /** @return a side's classpath, with its own properties and flags when it has any */
    private static String describe(String classpath, Map<String, String> options, String side) {
        StringBuilder sb = new StringBuilder(classpath);
        options.forEach((k, v) -> {
            if (k.startsWith(side + ".prop.") || k.equals(side + ".jvm")) {
                sb.append(", ").append(k.substring(side.length() + 1)).append('=').append(v);
            }
        });
        return sb.toString();
    }

    /** @return whether {@code kind} repeats one key (a replay, or its baseline) */
    private static boolean replays(Wrk.Kind kind) {
        return kind.script.equals(Wrk.Kind.REPLAYS.script);
    }

    /** The replay key, or a fresh prefix per run for new keys. */
    private static String key(Wrk.Kind kind, String run, String suffix) {
        return replays(kind) ? "ab-" + run : "ab-" + run + "-" + suffix;
    }

    private static Side measure(Wrk wrk, LoadService service, Wrk.Kind kind, String key, int seconds)
        throws Exception {
        long cpuBefore = service.cpuNanos();
        Map<ProcCpu.Group, Long> threadsBefore = service.cpuNanosByThreadGroup();
        Wrk.Result r = wrk.run("http://127.0.0.1:" + service.port, kind, key, 2, 32, seconds);
        long cpuAfter = service.cpuNanos();
        Map<ProcCpu.Group, Long> threadsAfter = service.cpuNanosByThreadGroup();
        if (r.failures() > 0) {
            throw new IllegalStateException(r.failures() + " requests failed under " + kind + " on port " + service.port);
        }
        return new Side(r.requestsPerSecond(), LoadStatistics.perRequest(cpuBefore, cpuAfter, r) / 1000,
            LoadStatistics.microsPerRequest(threadsBefore, threadsAfter, ProcCpu.Group.EVENT_LOOPS, r));
    }

    /** @return one summary as a line of the report */
    static String line(String which, Summary s) {
        return String.format(Locale.ROOT, "%s: B/A req/s median %.3f (pairs %.3f to %.3f; B faster in %d, slower in"
                + " %d of %d pairs, sign test p = %.3f); B minus A, service CPU per request: median %+.1f µs, of it on"
                + " the event loops %+.1f µs", which, s.medianRatio(), s.minRatio(), s.maxRatio(), s.faster(),
            s.slower(), s.faster() + s.slower(), s.signTestP(), s.medianCpuDifference(), s.medianEventLoopDifference());
    }

    private static String report(String classpathA, String classpathB, Wrk.Kind kind, int seconds, int warmup,
                                 int pairsPerPass, List<Side> a, List<Side> b) {
        Summary s = summarize(a, b);
        int passes = a.size() / pairsPerPass;
        StringBuilder sb = new StringBuilder();
        sb.append(String.format(Locale.ROOT, "# A/B, %s, %d CPUs, Java %s: %s (%s), wrk -t2 -c32, %d pairs of %d s"
                + " alternated, %s, after %d s of warm-up each%n%n", LocalDate.now(),
            Runtime.getRuntime().availableProcessors(), System.getProperty("java.version"), kind, kind.path, a.size(),
            seconds, passes == 1 ? "one pass, A started first"
                : passes + " passes of fresh services, every second one started B first", warmup));
        sb.append("- A: ").append(classpathA).append('\n');
        sb.append("- B: ").append(classpathB).append('\n');
        sb.append("- **").append(line("all pairs", s)).append("**\n");
        for (int p = 0; passes > 1 && p < passes; p++) {
            List<Side> pa = a.subList(p * pairsPerPass, (p + 1) * pairsPerPass);
            List<Side> pb = b.subList(p * pairsPerPass, (p + 1) * pairsPerPass);
            sb.append("- ").append(line("pass " + (p + 1) + (startsBFirst(p) ? ", B started first" : ", A started first"),
                summarize(pa, pb))).append('\n');
        }
        sb.append('\n');
        sb.append("| pair | started first | A req/s | B req/s | B/A | A CPU/req | B CPU/req | A event loops/req"
            + " | B event loops/req |\n");
        sb.append("|---:|---|---:|---:|---:|---:|---:|---:|---:|\n");
        for (int i = 0; i < a.size(); i++) {
            Side x = a.get(i);
            Side y = b.get(i);
            sb.append(String.format(Locale.ROOT,
                "| %d | %s | %,.0f | %,.0f | %.3f | %.1f µs | %.1f µs | %.1f µs | %.1f µs |%n",
                i + 1, startsBFirst(i / pairsPerPass) ? "B" : "A", x.requestsPerSecond(), y.requestsPerSecond(),
                y.requestsPerSecond() / x.requestsPerSecond(), x.cpuMicrosPerRequest(), y.cpuMicrosPerRequest(),
                x.eventLoopMicrosPerRequest(), y.eventLoopMicrosPerRequest()));
        }
        return sb.toString();
    }
}
