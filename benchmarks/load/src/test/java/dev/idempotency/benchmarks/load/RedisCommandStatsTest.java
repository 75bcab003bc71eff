package dev.idempotency.benchmarks.load;

import dev.idempotency.testsupport.TestRedis;
import io.lettuce.core.RedisClient;
import io.lettuce.core.api.StatefulRedisConnection;
import org.junit.jupiter.api.Test;

import java.net.URI;
import java.util.Map;

import static org.assertj.core.api.Assertions.assertThat;

class RedisCommandStatsTest {

    @Test
    void readsEachCommandsCallsAndTime() {
        String info = """
            # Commandstats\r
            cmdstat_evalsha:calls=406791,usec=3255221,usec_per_call=8.00,rejected_calls=0,failed_calls=0\r
            cmdstat_set:calls=813582,usec=1765479,usec_per_call=2.17,rejected_calls=0,failed_calls=0\r
            cmdstat_client|setname:calls=2,usec=3,usec_per_call=1.50,rejected_calls=0,failed_calls=0\r
            """;

        Map<String, RedisCommandStats.Totals> totals = RedisCommandStats.parse(info);

        assertThat(totals).containsExactly(
            Map.entry("evalsha", new RedisCommandStats.Totals(406_791, 3_255_221)),
            Map.entry("set", new RedisCommandStats.Totals(813_582, 1_765_479)),
            Map.entry("client|setname", new RedisCommandStats.Totals(2, 3)));
    }

    @Test
    void takesTheDifferenceOfTwoReadingsAndLeavesOutIdleCommands() {
        Map<String, RedisCommandStats.Totals> before = Map.of(
            "set", new RedisCommandStats.Totals(10, 30),
            "get", new RedisCommandStats.Totals(5, 5));
        Map<String, RedisCommandStats.Totals> after = Map.of(
            "set", new RedisCommandStats.Totals(14, 42),
            "get", new RedisCommandStats.Totals(5, 5),
            "evalsha", new RedisCommandStats.Totals(2, 16));

        assertThat(RedisCommandStats.between(before, after)).containsOnly(
            Map.entry("set", new RedisCommandStats.Totals(4, 12)),
            Map.entry("evalsha", new RedisCommandStats.Totals(2, 16)));
    }

    @Test
    void countsTheCommandsARealServerRanBetweenTwoReadings() throws Exception {
        URI redis = URI.create(TestRedis.uri());
        RedisClient client = RedisClient.create(TestRedis.uri());
        try (StatefulRedisConnection<String, String> connection = client.connect()) {
            connection.sync().echo("warm"); // the connection's own hello and setname before the first reading

            Map<String, RedisCommandStats.Totals> before = RedisCommandStats.read(redis);
            for (int i = 0; i < 3; i++) {
                connection.sync().echo("counted " + i);
            }
            Map<String, RedisCommandStats.Totals> between = RedisCommandStats.between(before,
                RedisCommandStats.read(redis));

            assertThat(between).containsKey("echo");
            assertThat(between.get("echo").calls()).isEqualTo(3);
            assertThat(between.get("echo").micros()).isNotNegative();
        } finally {
            client.shutdown();
        }
    }
}
