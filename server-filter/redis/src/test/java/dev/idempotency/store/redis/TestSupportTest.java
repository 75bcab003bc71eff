package dev.idempotency.store.redis;

import dev.idempotency.testsupport.RedisServerProcess;
import dev.idempotency.testsupport.TestRedis;

import dev.idempotency.server.store.AcquireResult;
import dev.idempotency.testsupport.MutableClock;
import io.lettuce.core.RedisClient;
import io.lettuce.core.RedisURI;
import org.junit.jupiter.api.DisplayName;
import org.junit.jupiter.api.Test;

import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;

import static org.assertj.core.api.Assertions.assertThat;

/** The test support itself: `mvn verify` must pass on a machine with only a JDK and Maven. */
class TestSupportTest {

    @Test
    @DisplayName("No Redis at the configured address: the test support starts one and uses it")
    void fallsBackToStartedServer() {
        int closedPort = RedisServerProcess.freePort(false);
        TestRedis.Resolved resolved = TestRedis.resolve("redis://127.0.0.1:" + closedPort);
        try {
            assertThat(resolved.started()).isNotNull();
            // the started server's own address (which may be the closed port itself: the system hands
            // out a port again once it is free)
            assertThat(resolved.uri()).isEqualTo(resolved.started().uri());
            assertThat(RedisServerProcess.ping("127.0.0.1", resolved.started().port(), 1000)).isTrue();
        } finally {
            Path dir = resolved.started().dir();
            resolved.started().close();
            assertThat(Files.exists(dir)).isFalse();
        }
    }

    @Test
    @DisplayName("A Redis that answers at the configured address is used as is")
    void usesAnsweringServer() {
        try (RedisServerProcess p = RedisServerProcess.start()) {
            TestRedis.Resolved resolved = TestRedis.resolve(p.uri());
            assertThat(resolved.started()).isNull();
            assertThat(resolved.uri()).isEqualTo(p.uri());
        }
    }

    @Test
    @DisplayName("Without redis-server on the PATH: the binary inside the embedded-redis jar runs, and the store works on it")
    void embeddedJarBinaryWorks() {
        try (RedisServerProcess p = RedisServerProcess.start(RedisServerProcess.jarBinary(),
            RedisServerProcess.freePort(false))) {
            RedisClient client = RedisClient.create(p.uri());
            try (RedisIdempotencyStore store = new RedisIdempotencyStore(client, List.of(RedisURI.create(p.uri())),
                new MutableClock(), new RedisIdempotencyStoreConfigurationProperties())) {
                assertThat(store.acquire("k", new byte[32], Duration.ofSeconds(30)).toCompletableFuture().join())
                    .isInstanceOf(AcquireResult.Acquired.class);
            } finally {
                client.shutdown();
            }
        }
    }
}
