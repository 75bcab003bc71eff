package dev.idempotency.benchmarks.load;

import dev.idempotency.testsupport.TestRedis;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.EnumMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.UUID;

/**
 * What tracing adds to the filter's latency (CONTRACT O4, issue 71's cost): one service
 * ({@link LoadApp}) whose routes under {@code /traced/} run under Micronaut's OpenTelemetry (spans
 * recorded, then dropped) and whose other routes are excluded from it. At one connection
 * ({@code wrk -t1 -c1}), in {@code --rounds} interleaved rounds of {@code --seconds}, the four
 * routes with a new key per request: the echo without the filter and with it, untraced and traced.
 * Each figure is the median over the rounds of a difference of p50s measured in the same round:
 * the filter's added latency with tracing off and on, what tracing adds to the filter (the
 * difference of those two), and what Micronaut's tracing costs the route itself.
 *
 * <p>{@code java -cp benchmarks/load/target/load-benchmark.jar dev.idempotency.benchmarks.load.TracingLatency
 * [--stores=memory,redis] [--rounds=12] [--seconds=2] [--warmup=30]}; the report goes to stdout and
 * {@code benchmarks/load/target/tracing-latency.md}.
 */
public final class TracingLatency {

    private static final List<Wrk.Kind> KINDS = List.of(Wrk.Kind.BASELINE_NEW, Wrk.Kind.NEW_KEYS,
        Wrk.Kind.TRACED_BASELINE_NEW, Wrk.Kind.TRACED_NEW_KEYS);

    private TracingLatency() {
    }

    public static void main(String[] args) throws Exception {
        Map<String, String> options = LoadBenchmark.options(args);
        int rounds = Integer.parseInt(options.getOrDefault("rounds", "12"));
        int seconds = Integer.parseInt(options.getOrDefault("seconds", "2"));
        int warmup = Integer.parseInt(options.getOrDefault("warmup", "30"));
        List<String> report = new ArrayList<>();
        report.add(String.format(Locale.ROOT, "At one connection (wrk -t1 -c1), %d interleaved rounds of %d s, after %d s"
            + " of warm-up per route; each figure the median over the rounds of a difference of p50s in one round.",
            rounds, seconds, warmup));
        report.add("");
        report.add("| store | filter added, tracing off | filter added, tracing on | tracing's cost to the filter"
            + " | tracing's cost to the route | route p50 off / on |");
        report.add("|---|---:|---:|---:|---:|---:|");
        for (String store : options.getOrDefault("stores", "memory,redis").split(",")) {
            report.add(run(store.trim(), rounds, seconds, warmup));
        }
        Path out = Path.of("benchmarks/load/target/tracing-latency.md");
        Files.createDirectories(out.getParent());
        Files.writeString(out, String.join("\n", report) + "\n");
        report.forEach(System.out::println);
    }

    private static String run(String store, int rounds, int seconds, int warmup) throws Exception {
        Map<String, String> props = new LinkedHashMap<>();
        String runId = UUID.randomUUID().toString().substring(0, 8);
        String prefix = "tracing-" + runId + ":";
        switch (store) {
            case "memory" -> props.put("idempotency.store.redis.enabled", "false");
            case "redis" -> {
                props.put("redis.uri", TestRedis.uri());
                props.put("idempotency.store.redis.enabled", "true");
                props.put(LoadBenchmark.REDIS_PREFIX, prefix);
                props.put("idempotency.retention", "2m");
            }
            default -> throw new IllegalArgumentException("unknown store " + store + "; use memory or redis");
        }
        Wrk wrk = new Wrk(Files.createTempDirectory("tracing-latency"));
        Map<Wrk.Kind, List<Wrk.Result>> single = new EnumMap<>(Wrk.Kind.class);
        try (LoadService service = LoadService.start(props, List.of())) {
            String base = "http://127.0.0.1:" + service.port;
            for (Wrk.Kind kind : KINDS) { // the JIT compiles each route's path under load first
                wrk.run(base, kind, "warm-" + runId + "-" + kind.ordinal(), 2, 16, warmup);
            }
            for (int round = 0; round < rounds; round++) {
                for (Wrk.Kind kind : LoadBenchmark.inRound(KINDS, round)) {
                    single.computeIfAbsent(kind, k -> new ArrayList<>())
                        .add(wrk.run(base, kind, runId + "-" + round + "-" + kind.ordinal(), 1, 1, seconds));
                }
            }
        } finally {
            if (store.equals("redis")) {
                System.err.println(StoreFloors.deleteRecords(props.get("redis.uri"), prefix));
            }
        }
        double off = LoadStatistics.medianDifference(single, Wrk.Kind.NEW_KEYS, Wrk.Kind.BASELINE_NEW);
        double on = LoadStatistics.medianDifference(single, Wrk.Kind.TRACED_NEW_KEYS, Wrk.Kind.TRACED_BASELINE_NEW);
        double route = LoadStatistics.medianDifference(single, Wrk.Kind.TRACED_BASELINE_NEW, Wrk.Kind.BASELINE_NEW);
        List<Double> perRound = new ArrayList<>();
        for (int i = 0; i < rounds; i++) {
            perRound.add((single.get(Wrk.Kind.TRACED_NEW_KEYS).get(i).p50Micros()
                - single.get(Wrk.Kind.TRACED_BASELINE_NEW).get(i).p50Micros())
                - (single.get(Wrk.Kind.NEW_KEYS).get(i).p50Micros() - single.get(Wrk.Kind.BASELINE_NEW).get(i).p50Micros()));
        }
        return String.format(Locale.ROOT, "| %s | %+.0f µs | %+.0f µs | %+.0f µs | %+.0f µs | %.0f / %.0f µs |", store, off,
            on, LoadStatistics.median(perRound), route,
            LoadStatistics.median(single.get(Wrk.Kind.BASELINE_NEW), Wrk.Result::p50Micros),
            LoadStatistics.median(single.get(Wrk.Kind.TRACED_BASELINE_NEW), Wrk.Result::p50Micros));
    }
}
