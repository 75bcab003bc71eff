package dev.idempotency.benchmarks.load;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.assertj.core.api.Assertions.within;

import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

import org.junit.jupiter.api.Test;

class AbBenchmarkTest {

    @Test
    void summarizesPairsByTheirRatiosAndDifferences() {
        List<AbBenchmark.Side> a = List.of(
            new AbBenchmark.Side(30_000, 40.0, 30.0),
            new AbBenchmark.Side(20_000, 50.0, 35.0), // a slow spell: both sides of this pair
            new AbBenchmark.Side(32_000, 39.0, 29.0));
        List<AbBenchmark.Side> b = List.of(
            new AbBenchmark.Side(31_500, 39.0, 28.0),
            new AbBenchmark.Side(21_000, 48.0, 34.5),
            new AbBenchmark.Side(32_000, 40.0, 29.5));
        AbBenchmark.Summary s = AbBenchmark.summarize(a, b);
        // ratios 1.05, 1.05, 1.0: the slow pair counts like the others, by its own ratio
        assertThat(s.medianRatio()).isCloseTo(1.05, within(1e-9));
        assertThat(s.minRatio()).isCloseTo(1.0, within(1e-9));
        assertThat(s.maxRatio()).isCloseTo(1.05, within(1e-9));
        // differences -1, -2, +1 and -2, -0.5, +0.5
        assertThat(s.medianCpuDifference()).isCloseTo(-1.0, within(1e-9));
        assertThat(s.medianEventLoopDifference()).isCloseTo(-0.5, within(1e-9));
        // two pairs faster, one tie: the tie counts for neither side
        assertThat(s.faster()).isEqualTo(2);
        assertThat(s.slower()).isZero();
        assertThat(s.signTestP()).isCloseTo(0.5, within(1e-9));
    }

    @Test
    void twoPassesWithOppositeStartOrdersCancelTheSecondServicesEdge() {
        // pass 1 (A started first): B, started second, wins every pair; pass 2 (B first): A wins every pair
        AbBenchmark.Side slow = new AbBenchmark.Side(30_000, 40.0, 30.0);
        AbBenchmark.Side fast = new AbBenchmark.Side(31_000, 39.0, 29.0);
        List<AbBenchmark.Side> a = List.of(slow, slow, slow, fast, fast, fast);
        List<AbBenchmark.Side> b = List.of(fast, fast, fast, slow, slow, slow);
        assertThat(AbBenchmark.summarize(a.subList(0, 3), b.subList(0, 3)).faster()).isEqualTo(3);
        AbBenchmark.Summary both = AbBenchmark.summarize(a, b);
        assertThat(both.faster()).isEqualTo(both.slower());
        assertThat(both.signTestP()).isCloseTo(1.0, within(1e-9));
        assertThat(AbBenchmark.line("all pairs", both)).startsWith("all pairs: B/A req/s median ")
            .contains("B faster in 3, slower in 3 of 6 pairs, sign test p = 1.000");
    }

    @Test
    void eachSideTakesTheCommonPropertiesWithItsOwnOverThem() {
        Map<String, String> options = LoadBenchmark.options(new String[] {"--prop.x=1", "--b.prop.x=2",
            "--b.prop.y=3", "--a.jvm=-XX:+UseParallelGC  -Xlog:gc", "--pairs=4"});
        Map<String, String> common = new LinkedHashMap<>(Map.of("z", "0"));
        LoadBenchmark.putServiceProperties(options, common);
        assertThat(AbBenchmark.sideProperties(options, "a", common)).isEqualTo(Map.of("z", "0", "x", "1"));
        assertThat(AbBenchmark.sideProperties(options, "b", common)).isEqualTo(Map.of("z", "0", "x", "2", "y", "3"));
        assertThat(AbBenchmark.jvmFlags(options, "a")).containsExactly("-XX:+UseParallelGC", "-Xlog:gc");
        assertThat(AbBenchmark.jvmFlags(options, "b")).isEmpty();
    }

    @Test
    void redisSidesGetAPrefixOfTheRunsOwnAndAnHourOfRetentionUnlessTheOptionsSayOtherwise() {
        Map<String, String> a = new LinkedHashMap<>(Map.of("idempotency.store.redis.enabled", "true"));
        Map<String, String> b = new LinkedHashMap<>(Map.of("idempotency.store.redis.enabled", "true",
            "idempotency.store.redis.key-prefix", "mine:", "idempotency.retention", "5m"));
        Map<String, String> memory = new LinkedHashMap<>(Map.of("idempotency.store.redis.enabled", "false"));

        assertThat(AbBenchmark.redisSides("r1", a, b)).containsExactly(a, b);
        assertThat(a).containsEntry("idempotency.store.redis.key-prefix", "ab-r1:")
            .containsEntry("idempotency.retention", "1h");
        assertThat(b).containsEntry("idempotency.store.redis.key-prefix", "mine:")
            .containsEntry("idempotency.retention", "5m");
        assertThat(AbBenchmark.redisSides("r2", memory, new LinkedHashMap<>(memory))).isEmpty();
        assertThat(memory).doesNotContainKeys("idempotency.store.redis.key-prefix", "idempotency.retention");
    }

    @Test
    void signTestIsTheTwoSidedBinomialTail() {
        assertThat(AbBenchmark.signTest(0, 0)).isEqualTo(1.0);
        assertThat(AbBenchmark.signTest(6, 6)).isEqualTo(1.0);
        // 9 of 12: P(X >= 9) = (220 + 66 + 12 + 1) / 4096, doubled
        assertThat(AbBenchmark.signTest(9, 3)).isCloseTo(2 * 299 / 4096.0, within(1e-12));
        assertThat(AbBenchmark.signTest(3, 9)).isEqualTo(AbBenchmark.signTest(9, 3));
        assertThat(AbBenchmark.signTest(12, 0)).isCloseTo(2 / 4096.0, within(1e-12));
        assertThat(AbBenchmark.signTest(1, 0)).isEqualTo(1.0);
    }

    @Test
    void refusesUnpairedFigures() {
        assertThatThrownBy(() -> AbBenchmark.summarize(List.of(new AbBenchmark.Side(1, 1, 1)), List.of()))
            .isInstanceOf(IllegalArgumentException.class);
        assertThatThrownBy(() -> AbBenchmark.summarize(List.of(), List.of()))
            .isInstanceOf(IllegalArgumentException.class);
    }
}
