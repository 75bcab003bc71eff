package dev.idempotency.benchmarks.load;

import dev.idempotency.testsupport.RedisServerProcess;
import org.junit.jupiter.api.Test;

import java.io.IOException;
import java.net.URI;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/** The benchmark's own Redis measurements on a Redis that requires a password, given in the URI. */
class PasswordRedisTest {

    @Test
    void measuresARedisThatRequiresAPassword() throws Exception {
        try (RedisServerProcess server = RedisServerProcess.start()) {
            server.requirePassword("s3cret");
            URI plain = URI.create(server.uri());
            URI withPassword = URI.create("redis://:s3cret@127.0.0.1:" + server.port());
            URI withUser = URI.create("redis://default:s3cret@127.0.0.1:" + server.port());

            assertThat(StoreFloors.redisRoundTripMicros(withPassword, 100)).isPositive();
            assertThat(RedisCommandStats.read(withUser)).containsKey("ping");
            // every caller of the round-trip benchmark authenticates: a refused PING would fail it
            RoundTripBenchmark.main(new String[] {"--count=100", "--redis=" + withPassword});
            assertThatThrownBy(() -> StoreFloors.redisRoundTripMicros(plain, 100))
                .isInstanceOf(IOException.class).hasMessageContaining("NOAUTH");
            assertThatThrownBy(() -> RedisCommandStats.read(plain))
                .isInstanceOf(IOException.class).hasMessageContaining("NOAUTH");
        }
    }
}
