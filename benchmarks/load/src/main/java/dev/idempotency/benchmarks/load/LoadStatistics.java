package dev.idempotency.benchmarks.load;

import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.function.Function;
import java.util.function.ToDoubleBiFunction;
import java.util.function.ToDoubleFunction;

/**
 * The load benchmark's arithmetic and formatting: medians over rounds, paired ratios against the
 * baseline, CPU per request, the checks that say a round is not to be trusted, and the units of
 * the report.
 */
final class LoadStatistics {

    private LoadStatistics() {
    }

    static double median(List<Wrk.Result> runs, ToDoubleFunction<Wrk.Result> value) {
        return median(runs.stream().mapToDouble(value).toArray());
    }

    /**
     * @return what a service counter ({@code before} and {@code after} a run) grew by per request
     *     of {@code run}, or NaN where the counter could not be read (-1) or nothing ran
     */
    static double perRequest(long before, long after, Wrk.Result run) {
        return before < 0 || after < 0 || run.requests() == 0 ? Double.NaN : (after - before) / (double) run.requests();
    }

    /**
     * @return the CPU µs per request of {@code run} that a thread group's counters ({@link ProcCpu},
     *     read before and after it) grew by; NaN where {@code /proc} could not tell, or where the
     *     group shrank (a thread of it ended, and its time with it)
     */
    static double microsPerRequest(Map<ProcCpu.Group, Long> before, Map<ProcCpu.Group, Long> after,
                                   ProcCpu.Group group, Wrk.Result run) {
        long b = before.getOrDefault(group, 0L);
        long a = after.getOrDefault(group, 0L);
        return after.isEmpty() || a < b ? Double.NaN : perRequest(b, a, run) / 1000;
    }

    static double median(List<Double> values) {
        return median(values.stream().mapToDouble(Double::doubleValue).toArray());
    }

    /** @return the median over the rounds of {@code kind}'s req/s divided by {@code base}'s in the same round */
    static double medianRatio(Map<Wrk.Kind, List<Wrk.Result>> rounds, Wrk.Kind kind, Wrk.Kind base) {
        return median(paired(rounds, kind, base, LoadStatistics::ratio));
    }

    /** @return the median over the rounds of {@code kind}'s p50 minus {@code base}'s p50 in the same round */
    static double medianDifference(Map<Wrk.Kind, List<Wrk.Result>> rounds, Wrk.Kind kind, Wrk.Kind base) {
        return median(paired(rounds, kind, base, (a, b) -> a.p50Micros() - b.p50Micros()));
    }

    /**
     * @return a caution when the route without the filter ran slow in this store's rounds, else
     *     {@code null}: the floor does everything that route does and copies the body besides, so
     *     it cannot be faster than it by more than noise, and when its median ratio comes out
     *     above {@value LoadBenchmark#SLOW_BASELINE} the baseline's rounds were slowed by the machine and every
     *     ratio to it overstates (the table shows those in brackets)
     */
    static String slowBaseline(String store, Map<Wrk.Kind, List<Wrk.Result>> loaded) {
        if (!loaded.containsKey(Wrk.Kind.FLOOR) || !loaded.containsKey(Wrk.Kind.BASELINE_NEW)) {
            return null;
        }
        double floor = medianRatio(loaded, Wrk.Kind.FLOOR, Wrk.Kind.BASELINE_NEW);
        if (!(floor > LoadBenchmark.SLOW_BASELINE)) {
            return null;
        }
        return String.format(Locale.ROOT, "- %s: **the route without the filter ran slow in this run** (new keys): the"
            + " floor, which does all it does and copies the body besides, reached %.2f of its req/s, above %.2f. The"
            + " ratios to it (in brackets in the table) overstate; read the filter against the floors in the notes"
            + " below, or run again", store, floor, LoadBenchmark.SLOW_BASELINE);
    }

    /**
     * The table gives a configuration's median req/s next to its baseline's and, as the ratio, the
     * median of each round's ratio to its own round's baseline: the paired figure, which a slow
     * spell that hits one round hits on both sides. When the machine's speed moved between the
     * rounds, the two ways of reading the table part, and a reader who divides its req/s columns
     * gets another answer than its ratio column. Says so, for every configuration where they part
     * by more than {@link LoadBenchmark#ROUNDS_DISAGREE}, with the spread of the rounds: one run does not place
     * such a figure more closely than that.
     *
     * @param store  the store the runs were on, for the note
     * @param loaded each configuration's runs under load, in the order of the rounds
     * @param label  names a configuration in the note
     * @return the note, or {@code null} when every configuration's two readings agree
     */
    static String roundsDisagree(String store, Map<Wrk.Kind, List<Wrk.Result>> loaded,
                                 Function<Wrk.Kind, String> label) {
        List<String> parts = new ArrayList<>();
        for (Wrk.Kind kind : loaded.keySet()) {
            if (kind.isBaseline() || !loaded.containsKey(kind.baseline())) {
                continue;
            }
            double paired = medianRatio(loaded, kind, kind.baseline());
            double ofMedians = median(loaded.get(kind), Wrk.Result::requestsPerSecond)
                / median(loaded.get(kind.baseline()), Wrk.Result::requestsPerSecond);
            if (Math.abs(paired - ofMedians) > LoadBenchmark.ROUNDS_DISAGREE) {
                double[] rounds = paired(loaded, kind, kind.baseline(), LoadStatistics::ratio);
                parts.add(String.format(Locale.ROOT, "%s %.2f in the table, %.2f from its req/s medians (rounds %.2f to"
                    + " %.2f)", label.apply(kind), paired, ofMedians, Arrays.stream(rounds).min().orElse(Double.NaN),
                    Arrays.stream(rounds).max().orElse(Double.NaN)));
            }
        }
        if (parts.isEmpty()) {
            return null;
        }
        return "- " + store + ": **the rounds disagree**, so the ratio to no filter (the median of the rounds' ratios)"
            + " and the ratio of the req/s medians part: " + String.join("; ", parts) + ". The machine's speed moved"
            + " between the rounds; one run places these figures no closer than their rounds' spread: run again, or"
            + " with more rounds (--rounds=), before reading them against a target";
    }

    static double ratio(Wrk.Result run, Wrk.Result baseline) {
        return run.requestsPerSecond() / baseline.requestsPerSecond();
    }

    /** @return {@code compare} applied to each round's pair of runs, in the order the rounds ran */
    static double[] paired(Map<Wrk.Kind, List<Wrk.Result>> rounds, Wrk.Kind kind, Wrk.Kind base,
                                   ToDoubleBiFunction<Wrk.Result, Wrk.Result> compare) {
        List<Wrk.Result> runs = rounds.get(kind);
        List<Wrk.Result> baselines = rounds.get(base);
        double[] values = new double[runs.size()];
        for (int i = 0; i < values.length; i++) {
            values[i] = compare.applyAsDouble(runs.get(i), baselines.get(i));
        }
        return values;
    }

    static double median(double[] values) {
        double[] sorted = values.clone();
        Arrays.sort(sorted);
        int n = sorted.length;
        return n % 2 == 1 ? sorted[n / 2] : (sorted[n / 2 - 1] + sorted[n / 2]) / 2;
    }

    static String signed(double micros) {
        return (micros < 0 ? "-" : "+") + micros(Math.abs(micros));
    }

    /** @return a CPU time per request for the notes: whole µs from 10 on, one decimal below */
    static String cpuMicros(double micros) {
        return String.format(Locale.ROOT, micros >= 10 ? "%.0f µs" : "%.1f µs", micros);
    }

    static String micros(double micros) {
        if (Double.isNaN(micros)) {
            return "-";
        }
        return micros >= 1000 ? String.format(Locale.ROOT, "%.2f ms", micros / 1000)
            : String.format(Locale.ROOT, "%.0f µs", micros);
    }

    static String kilobytes(double bytes) {
        return Double.isNaN(bytes) ? "-" : String.format(Locale.ROOT, "%.1f KB", bytes / 1000);
    }
}
