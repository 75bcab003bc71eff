package dev.idempotency.testsupport;

import org.junit.jupiter.api.DisplayName;
import org.junit.jupiter.api.Test;

import java.io.IOException;
import java.net.URI;
import java.time.Duration;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/** The TCP forwarder the drills use: cut and restored, moved to another server, and with a delay line. */
class TcpProxyTest {

    private static int serverPort(TcpProxy proxy) throws IOException {
        String info = RedisWire.info(URI.create("redis://127.0.0.1:" + proxy.port()), "server", 2000);
        return info.lines().filter(l -> l.startsWith("tcp_port:"))
            .mapToInt(l -> Integer.parseInt(l.substring("tcp_port:".length()).trim())).findFirst().orElseThrow();
    }

    @Test
    @DisplayName("stop refuses and start restores on the same port; retarget moves new connections, as a virtual IP")
    void stopStartRetarget() throws IOException {
        try (RedisServerProcess a = RedisServerProcess.start();
             RedisServerProcess b = RedisServerProcess.start();
             TcpProxy proxy = new TcpProxy("127.0.0.1", a.port())) {
            assertThat(serverPort(proxy)).isEqualTo(a.port());
            proxy.stop();
            assertThatThrownBy(() -> serverPort(proxy)).isInstanceOf(IOException.class);
            proxy.retarget("127.0.0.1", b.port());
            proxy.start(); // at once: the port a listener just closed is bound again
            assertThat(serverPort(proxy)).isEqualTo(b.port());
        }
    }

    @Test
    @DisplayName("a delay line forwards every byte, in order, both ways (a whole INFO reply through it)")
    void delayLineForwardsInOrder() throws IOException {
        try (RedisServerProcess redis = RedisServerProcess.start();
             TcpProxy proxy = new TcpProxy("127.0.0.1", redis.port(), Duration.ofMillis(5))) {
            String direct = RedisWire.info(URI.create(redis.uri()), "server", 2000);
            String delayed = RedisWire.info(URI.create("redis://127.0.0.1:" + proxy.port()), "server", 2000);
            assertThat(delayed.lines().filter(l -> l.startsWith("run_id:")).toList())
                .isEqualTo(direct.lines().filter(l -> l.startsWith("run_id:")).toList());
            assertThat(delayed.length()).isGreaterThan(500);
        }
    }
}
