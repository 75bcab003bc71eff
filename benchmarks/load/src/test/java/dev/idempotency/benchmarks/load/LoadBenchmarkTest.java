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

        String caution = LoadStatistics.slowBaseline("memory", loaded);

        assertThat(caution).startsWith("- memory: ").contains("ran slow").contains("1.16 of its req/s")
            .contains("above 1.05");
    }

    @Test
    void aFloorWithinNoiseOfTheRouteWithoutTheFilterSaysNothing() {
        Map<Wrk.Kind, List<Wrk.Result>> loaded = new EnumMap<>(Wrk.Kind.class);
        loaded.put(Wrk.Kind.BASELINE_NEW, runs(18_000, 19_000, 18_500));
        // one round at 1.11, the median at 1.03: a round out of line is not a slow baseline
        loaded.put(Wrk.Kind.FLOOR, runs(20_000, 19_500, 18_000));

        assertThat(LoadStatistics.slowBaseline("redis", loaded)).isNull();
        // and no floor measured, nothing to tell by
        loaded.remove(Wrk.Kind.FLOOR);
        assertThat(LoadStatistics.slowBaseline("redis", loaded)).isNull();
    }

    @Test
    void roundsWhoseRatioAndReqPerSecondMediansPartAreCalledOut() {
        // the in-memory new keys of benchmarks/README's 47ff384 entry: rounds 0.85, 0.67, 0.85
        // make a median ratio of 0.85, while the req/s medians (39,865 against 57,381) make 0.69
        Map<Wrk.Kind, List<Wrk.Result>> loaded = new EnumMap<>(Wrk.Kind.class);
        loaded.put(Wrk.Kind.BASELINE_NEW, runs(46_900, 59_500, 57_381));
        loaded.put(Wrk.Kind.NEW_KEYS, runs(39_865, 39_865, 48_774));
        loaded.put(Wrk.Kind.FLOOR, runs(45_500, 57_700, 55_700)); // 0.97 each round: agrees

        String caution = LoadStatistics.roundsDisagree("memory", loaded, Wrk.Kind::name);

        assertThat(caution).startsWith("- memory: **the rounds disagree**")
            .contains("NEW_KEYS 0.85 in the table, 0.69 from its req/s medians (rounds 0.67 to 0.85)")
            .doesNotContain("FLOOR").contains("--rounds=");
    }

    @Test
    void roundsThatAgreeSayNothing() {
        Map<Wrk.Kind, List<Wrk.Result>> loaded = new EnumMap<>(Wrk.Kind.class);
        loaded.put(Wrk.Kind.BASELINE_NEW, runs(50_000, 40_000, 52_000));
        // a slow spell in the second round hit both sides: 0.80, 0.80, 0.81, and 0.80 from the medians
        loaded.put(Wrk.Kind.NEW_KEYS, runs(40_000, 32_000, 42_000));
        loaded.put(Wrk.Kind.BASELINE_REPLAY, runs(50_000, 51_000, 49_000));
        loaded.put(Wrk.Kind.REPLAYS, runs(75_000, 76_000, 74_000));

        assertThat(LoadStatistics.roundsDisagree("redis", loaded, Wrk.Kind::name)).isNull();
        // a configuration whose baseline was not run is left out, not a failure
        loaded.remove(Wrk.Kind.BASELINE_REPLAY);
        assertThat(LoadStatistics.roundsDisagree("redis", loaded, Wrk.Kind::name)).isNull();
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
