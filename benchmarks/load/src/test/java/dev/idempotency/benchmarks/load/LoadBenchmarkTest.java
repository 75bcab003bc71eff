package dev.idempotency.benchmarks.load;

import static org.assertj.core.api.Assertions.assertThat;

import java.util.Arrays;
import java.util.EnumMap;
import java.util.List;
import java.util.Map;

import org.junit.jupiter.api.Test;

class LoadBenchmarkTest {

    private static List<Wrk.Result> runs(double... requestsPerSecond) {
        return Arrays.stream(requestsPerSecond)
            .mapToObj(rps -> new Wrk.Result(rps, 1_000, 5_000, (long) rps * 10, 0)).toList();
    }

    @Test
    void aFloorFasterThanTheRouteWithoutTheFilterMarksThatRouteAsSlow() {
        Map<Wrk.Kind, List<Wrk.Result>> loaded = new EnumMap<>(Wrk.Kind.class);
        loaded.put(Wrk.Kind.BASELINE_NEW, runs(18_000, 19_000, 18_500));
        loaded.put(Wrk.Kind.FLOOR, runs(21_000, 20_500, 21_500)); // 1.17, 1.08, 1.16: median 1.16
        loaded.put(Wrk.Kind.NEW_KEYS, runs(16_000, 15_500, 16_200));

        String caution = LoadBenchmark.slowBaseline("memory", loaded);

        assertThat(caution).startsWith("- memory: ").contains("ran slow").contains("1.16 of its req/s")
            .contains("above 1.05");
    }

    @Test
    void aFloorWithinNoiseOfTheRouteWithoutTheFilterSaysNothing() {
        Map<Wrk.Kind, List<Wrk.Result>> loaded = new EnumMap<>(Wrk.Kind.class);
        loaded.put(Wrk.Kind.BASELINE_NEW, runs(18_000, 19_000, 18_500));
        // one round at 1.11, the median at 1.03: a round out of line is not a slow baseline
        loaded.put(Wrk.Kind.FLOOR, runs(20_000, 19_500, 18_000));

        assertThat(LoadBenchmark.slowBaseline("redis", loaded)).isNull();
        // and no floor measured, nothing to tell by
        loaded.remove(Wrk.Kind.FLOOR);
        assertThat(LoadBenchmark.slowBaseline("redis", loaded)).isNull();
    }

    @Test
    void eachRoundStartsOneConfigurationFurtherAlong() {
        List<Wrk.Kind> kinds = List.of(Wrk.Kind.BASELINE_NEW, Wrk.Kind.NEW_KEYS, Wrk.Kind.FLOOR);

        assertThat(LoadBenchmark.inRound(kinds, 0)).containsExactly(Wrk.Kind.BASELINE_NEW, Wrk.Kind.NEW_KEYS,
            Wrk.Kind.FLOOR);
        assertThat(LoadBenchmark.inRound(kinds, 1)).containsExactly(Wrk.Kind.NEW_KEYS, Wrk.Kind.FLOOR,
            Wrk.Kind.BASELINE_NEW);
        assertThat(LoadBenchmark.inRound(kinds, 5)).containsExactly(Wrk.Kind.FLOOR, Wrk.Kind.BASELINE_NEW,
            Wrk.Kind.NEW_KEYS);
        assertThat(kinds).containsExactly(Wrk.Kind.BASELINE_NEW, Wrk.Kind.NEW_KEYS, Wrk.Kind.FLOOR); // left as it was
    }
}
