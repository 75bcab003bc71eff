package dev.idempotency.store.redis;

import ch.qos.logback.classic.Level;
import dev.idempotency.server.store.AcquireResult;
import dev.idempotency.server.store.StoredResponse;
import dev.idempotency.testsupport.Await;
import dev.idempotency.testsupport.LogCapture;
import dev.idempotency.testsupport.MutableClock;
import io.lettuce.core.RedisChannelHandler;
import io.lettuce.core.api.StatefulConnection;
import io.netty.channel.EventLoop;
import io.netty.channel.IoHandlerFactory;
import io.netty.channel.MultiThreadIoEventLoopGroup;
import io.netty.channel.local.LocalIoHandler;
import io.netty.channel.nio.NioIoHandler;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.DisplayName;
import org.junit.jupiter.api.Test;

import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.TimeUnit;
import java.util.function.Supplier;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * Which connection a call made on an event loop uses: a connection of that loop when the loop
 * runs the transport Lettuce uses (NIO here: no native transport is on this module's class
 * path), every call's stage then completed on the loop without a hand-over; the shared
 * connection when the loop runs another transport (the case of a server on NIO with
 * netty-transport-native-epoll on the class path, played here by Netty's in-process transport),
 * which works and is logged once with what to change. With the native library itself: the
 * {@code RedisNativeTransport*} tests, in a test run of their own.
 */
class RedisLoopTransportTest {

    static OwnRedis redis;

    final MutableClock clock = new MutableClock();

    @BeforeAll
    static void start() {
        assertThat(RedisConnector.lettuceChannel()).as("no native transport on this module's test class path,"
            + " so Lettuce uses NIO (these tests are written for that)").isEqualTo("NioSocketChannel");
        redis = OwnRedis.start();
    }

    @AfterAll
    static void stop() {
        redis.close();
    }

    @Test
    @DisplayName("S17: a call on an event loop of Lettuce's transport goes out on a connection of that loop, and"
        + " acquire, completion and replay complete on the loop, with no hand-over between threads")
    void loopOfLettucesTransportGetsItsOwnConnection() throws Exception {
        MultiThreadIoEventLoopGroup group = new MultiThreadIoEventLoopGroup(1, NioIoHandler.newFactory());
        try (RedisIdempotencyStore store = store()) {
            EventLoop loop = group.next();
            String key = UUID.randomUUID().toString();
            StoredResponse response = new StoredResponse(201, Map.of("Content-Type", List.of("application/json")),
                bytes("{\"id\":7}"), false);

            OnLoop<AcquireResult> acquired = onLoop(loop, () -> store.acquire(key, bytes("a"), Duration.ofSeconds(30)));
            assertThat(acquired.value()).isInstanceOf(AcquireResult.Acquired.class);
            assertThat(acquired.completedOnLoop()).as("the acquire completed on the loop").isTrue();
            long token = ((AcquireResult.Acquired) acquired.value()).fencingToken();

            OnLoop<Boolean> completed = onLoop(loop, () -> store.complete(key, token, response, Duration.ofHours(1)));
            assertThat(completed.value()).isTrue();
            assertThat(completed.completedOnLoop()).as("the completion completed on the loop").isTrue();

            OnLoop<AcquireResult> replay = onLoop(loop, () -> store.acquire(key, bytes("a"), Duration.ofSeconds(30)));
            assertThat(replay.value()).isInstanceOf(AcquireResult.Replay.class);
            assertThat(((AcquireResult.Replay) replay.value()).response().body()).isEqualTo(response.body());
            assertThat(replay.completedOnLoop()).as("the replay completed on the loop").isTrue();

            assertThat(store.loopsWithOwnConnection()).containsExactly(loop);
            assertThat(store.connections()).as("the loop's own connection, no shared one").hasSize(1);
            assertThat(store.describe()).contains("a connection per event loop of Lettuce's transport (NioSocketChannel)");
        } finally {
            group.shutdownGracefully(0, 1, TimeUnit.SECONDS).syncUninterruptibly();
        }
    }

    @Test
    @DisplayName("S17: calls on event loops of another transport than Lettuce's share the store's one connection and"
        + " work; the store says so once, with what to change for a Lettuce on NIO")
    void loopOfAnotherTransportSharesTheConnection() throws Exception {
        MultiThreadIoEventLoopGroup group = new MultiThreadIoEventLoopGroup(2, (IoHandlerFactory) LocalIoHandler.newFactory());
        try (StoreLog log = new StoreLog(); RedisIdempotencyStore store = store()) {
            String key = UUID.randomUUID().toString();
            EventLoop first = group.next();
            EventLoop second = group.next();
            assertThat(second).isNotSameAs(first);
            assertThat(onLoop(first, () -> store.acquire(key, bytes("a"), Duration.ofSeconds(30))).value())
                .isInstanceOf(AcquireResult.Acquired.class);
            assertThat(onLoop(second, () -> store.acquire(key, bytes("a"), Duration.ofSeconds(30))).value())
                .isInstanceOf(AcquireResult.InProgress.class);
            assertThat(onLoop(first, () -> store.acquire(key, bytes("b"), Duration.ofSeconds(30))).value())
                .isInstanceOf(AcquireResult.Mismatch.class);

            assertThat(store.loopsWithOwnConnection()).isEmpty();
            assertThat(store.connections()).as("the shared connection only").hasSize(1);
            assertThat(log.otherTransportLine())
                .contains("(NioSocketChannel)")
                .contains("run the server's event loops on NIO too")
                .contains("micronaut.server.netty.use-native-transport unset");
        } finally {
            group.shutdownGracefully(0, 1, TimeUnit.SECONDS).syncUninterruptibly();
        }
    }

    @Test
    @DisplayName("S17: with event-loop-connections=false every call shares one connection, and the store's"
        + " description does not claim one per loop")
    void eventLoopConnectionsOff() throws Exception {
        RedisIdempotencyStoreConfigurationProperties cfg = new RedisIdempotencyStoreConfigurationProperties();
        cfg.setEventLoopConnections(false);
        MultiThreadIoEventLoopGroup group = new MultiThreadIoEventLoopGroup(1, NioIoHandler.newFactory());
        try (RedisIdempotencyStore store = redis.store(clock, cfg)) {
            assertThat(onLoop(group.next(), () -> store.acquire(UUID.randomUUID().toString(), bytes("a"),
                Duration.ofSeconds(30))).value()).isInstanceOf(AcquireResult.Acquired.class);
            assertThat(store.loopsWithOwnConnection()).isEmpty();
            assertThat(store.connections()).hasSize(1);
            assertThat(store.describe()).doesNotContain("per event loop");
        } finally {
            group.shutdownGracefully(0, 1, TimeUnit.SECONDS).syncUninterruptibly();
        }
    }

    @Test
    @DisplayName("S17: closing the store closes its shared and its event loops' connections, each once (Lettuce"
        + " warns of no second close), whether the loops still run or are stopping (a server shut down before"
        + " the store)")
    void closeClosesEveryConnectionOnce() throws Exception {
        for (boolean loopsStopFirst : new boolean[] {false, true}) {
            closeOnce(loopsStopFirst);
        }
    }

    private void closeOnce(boolean loopsStopFirst) throws Exception {
        int before = redis.server.connectedClients();
        MultiThreadIoEventLoopGroup group = new MultiThreadIoEventLoopGroup(2, NioIoHandler.newFactory());
        RedisIdempotencyStore store = store();
        List<StatefulConnection<byte[], byte[]>> connections;
        try (LogCapture lettuce = LogCapture.of(RedisChannelHandler.class, Level.WARN).start()) {
            try {
                for (int i = 0; i < 2; i++) {
                    EventLoop loop = group.next();
                    assertThat(onLoop(loop, () -> store.acquire(UUID.randomUUID().toString(), bytes("a"),
                        Duration.ofSeconds(30))).value()).isInstanceOf(AcquireResult.Acquired.class);
                }
                assertThat(store.acquire(UUID.randomUUID().toString(), bytes("a"), Duration.ofSeconds(30))
                    .toCompletableFuture().get(10, TimeUnit.SECONDS)).isInstanceOf(AcquireResult.Acquired.class);
                connections = store.connections();
                assertThat(connections).as("the shared connection and one of each loop").hasSize(3);
                assertThat(redis.server.connectedClients()).as("the server sees the three").isEqualTo(before + 3);
                if (loopsStopFirst) {
                    // as a server's shutdown leaves them to the store: stopping, their channels still open
                    group.shutdownGracefully(1, 5, TimeUnit.SECONDS);
                    assertThat(group.isShuttingDown()).isTrue();
                }
                store.close();
            } finally {
                group.shutdownGracefully(0, 1, TimeUnit.SECONDS).syncUninterruptibly();
            }
            assertThat(connections).as("loops stopping: %s", loopsStopFirst).noneMatch(StatefulConnection::isOpen);
            assertThat(store.connections()).isEmpty();
            Await.until("the server to see the store's three connections closed (loops stopping: " + loopsStopFirst
                + ")", Duration.ofSeconds(10), () -> redis.server.connectedClients() <= before);
            assertThat(lettuce.lines(Level.WARN)).as("loops stopping: %s", loopsStopFirst).isEmpty();
        }
    }

    private RedisIdempotencyStore store() {
        return redis.store(clock, new RedisIdempotencyStoreConfigurationProperties());
    }

    static byte[] bytes(String s) {
        return s.getBytes(StandardCharsets.UTF_8);
    }

    /** A call's result, and whether its stage completed on the loop it was made on. */
    record OnLoop<T>(T value, boolean completedOnLoop) {
    }

    /**
     * Makes {@code call} on {@code loop} as the filter makes it and notes the thread its stage
     * completes on: the loop task that made the call ends before the loop can read a reply, so
     * a stage completed on the loop was completed by a reply read there.
     */
    static <T> OnLoop<T> onLoop(EventLoop loop, Supplier<CompletionStage<T>> call) throws Exception {
        CompletableFuture<OnLoop<T>> result = loop.submit(() -> call.get().toCompletableFuture()
            .thenApply(v -> new OnLoop<>(v, loop.inEventLoop()))).get(5, TimeUnit.SECONDS);
        return result.get(10, TimeUnit.SECONDS);
    }
}
