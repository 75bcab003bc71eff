package dev.idempotency.testsupport;

import org.junit.jupiter.api.Test;

import java.io.IOException;
import java.net.Socket;
import java.net.URI;
import java.nio.charset.StandardCharsets;
import java.time.Duration;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

class RedisWireTest {

    private static String auth(String uri) {
        byte[] command = RedisWire.auth(URI.create(uri));
        return command == null ? null : new String(command, StandardCharsets.UTF_8);
    }

    @Test
    void readsCredentialsAsLettuceDoes() {
        assertThat(auth("redis://127.0.0.1:6379")).isNull();
        assertThat(auth("redis://s3cret@127.0.0.1")).isEqualTo("*2\r\n$4\r\nAUTH\r\n$6\r\ns3cret\r\n");
        assertThat(auth("redis://:s3cret@127.0.0.1")).isEqualTo("*2\r\n$4\r\nAUTH\r\n$6\r\ns3cret\r\n");
        assertThat(auth("redis://bench:s3cret@127.0.0.1")).isEqualTo("*3\r\n$4\r\nAUTH\r\n$5\r\nbench\r\n$6\r\ns3cret\r\n");
        // percent-encoded in the URI, sent as itself; lengths in bytes
        assertThat(auth("redis://:p%C3%A4ss%40word@127.0.0.1")).isEqualTo("*2\r\n$4\r\nAUTH\r\n$10\r\npäss@word\r\n");
    }

    @Test
    void refusesTls() {
        assertThatThrownBy(() -> RedisWire.open(URI.create("rediss://127.0.0.1:6379"), 1000))
            .isInstanceOf(IOException.class).hasMessageContaining("only redis:// URIs");
    }

    @Test
    void countsTheServersClientsWithoutItsOwnConnection() throws Exception {
        try (RedisServerProcess server = RedisServerProcess.start()) {
            int before = server.connectedClients();
            try (Socket held = RedisWire.open(URI.create(server.uri()), 1000)) {
                assertThat(server.connectedClients()).isEqualTo(before + 1);
            }
            Await.until("the server to see the connection closed", Duration.ofSeconds(10),
                () -> server.connectedClients() == before);
        }
    }

    @Test
    void reachesARedisThatRequiresAPasswordWithTheUrisCredentials() throws Exception {
        try (RedisServerProcess server = RedisServerProcess.start()) {
            server.requirePassword("s3cret");
            String base = "127.0.0.1:" + server.port();
            assertThat(RedisWire.answersPing(URI.create("redis://:s3cret@" + base), 1000)).isTrue();
            assertThat(RedisWire.answersPing(URI.create("redis://default:s3cret@" + base), 1000)).isTrue();
            assertThat(RedisWire.answersPing(URI.create("redis://" + base), 1000)).as("no password: NOAUTH").isFalse();
            assertThat(RedisWire.answersPing(URI.create("redis://:wrong@" + base), 1000)).isFalse();
            assertThatThrownBy(() -> RedisWire.open(URI.create("redis://:wrong@" + base), 1000))
                .isInstanceOf(IOException.class).hasMessageContaining("refused the URI's credentials");
            assertThat(RedisWire.info(URI.create("redis://:s3cret@" + base), "server", 1000)).contains("redis_version:");
            assertThatThrownBy(() -> RedisWire.info(URI.create("redis://" + base), "server", 1000))
                .isInstanceOf(IOException.class).hasMessageContaining("answered INFO server with -NOAUTH");

            // the tests' Redis: a configured server that needs a password is used, not replaced by an embedded one
            TestRedis.Resolved resolved = TestRedis.resolve("redis://:s3cret@" + base);
            assertThat(resolved.started()).isNull();
            assertThat(resolved.uri()).isEqualTo("redis://:s3cret@" + base);
        }
    }
}
