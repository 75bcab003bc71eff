package dev.idempotency.store.redis;

import dev.idempotency.server.store.AcquireResult;
import dev.idempotency.server.store.StoredResponse;
import dev.idempotency.store.tck.NonBlockingGuard;
import dev.idempotency.testsupport.MutableClock;
import io.netty.channel.EventLoop;
import io.netty.channel.IoHandlerFactory;
import io.netty.channel.MultiThreadIoEventLoopGroup;
import io.netty.channel.local.LocalIoHandler;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.DisplayName;
import org.junit.jupiter.api.Test;

import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import java.util.concurrent.TimeUnit;

import static dev.idempotency.store.redis.RedisLoopTransportTest.bytes;
import static dev.idempotency.store.redis.RedisLoopTransportTest.onLoop;
import static org.assertj.core.api.Assertions.assertThat;

/**
 * S17: calls made on event loops of another transport than Lettuce's (Netty's in-process
 * transport here, standing in for a server on NIO with Lettuce on epoll) block none of those
 * loops (BlockHound): the shared connection opened by the first such call, the once-only line
 * that says so, acquire, 409, 422, completion, replay, renewal and release. The HTTP path on the
 * loops' own connections is {@link RedisNonBlockingTest}'s; the real mixed case, a server on NIO
 * with Lettuce on epoll, is {@link RedisNativeTransportMixedNonBlockingTest}'s.
 */
class RedisOtherTransportNonBlockingTest {

    static OwnRedis redis;

    @BeforeAll
    static void start() {
        NonBlockingGuard.install();
        redis = OwnRedis.start();
    }

    @AfterAll
    static void stop() {
        redis.close();
    }

    @Test
    @DisplayName("S17: store calls on loops of another transport than Lettuce's, through the shared connection,"
        + " block no loop")
    void sharedConnectionFromLoopsOfAnotherTransportBlocksNothing() throws Exception {
        MultiThreadIoEventLoopGroup group = new MultiThreadIoEventLoopGroup(2, (IoHandlerFactory) LocalIoHandler.newFactory());
        NonBlockingGuard.clear();
        // the store's log at INFO, so that the once-only line is written, on the loop
        try (StoreLog log = new StoreLog();
             RedisIdempotencyStore store = redis.store(new MutableClock(), new RedisIdempotencyStoreConfigurationProperties())) {
            EventLoop first = group.next();
            EventLoop second = group.next();
            String key = UUID.randomUUID().toString();
            Duration lease = Duration.ofSeconds(30);
            StoredResponse response = new StoredResponse(201, Map.of("Content-Type", List.of("application/json")),
                bytes("{\"id\":7}"), false);

            AcquireResult acquired = onLoop(first, () -> store.acquire(key, bytes("a"), lease)).value();
            assertThat(acquired).isInstanceOf(AcquireResult.Acquired.class);
            long token = ((AcquireResult.Acquired) acquired).fencingToken();
            assertThat(onLoop(second, () -> store.acquire(key, bytes("a"), lease)).value())
                .isInstanceOf(AcquireResult.InProgress.class);
            assertThat(onLoop(second, () -> store.acquire(key, bytes("b"), lease)).value())
                .isInstanceOf(AcquireResult.Mismatch.class);
            assertThat(onLoop(first, () -> store.renew(key, token, lease)).value()).isTrue();
            assertThat(onLoop(first, () -> store.complete(key, token, response, Duration.ofHours(1))).value()).isTrue();
            assertThat(onLoop(second, () -> store.acquire(key, bytes("a"), lease)).value())
                .isInstanceOf(AcquireResult.Replay.class);

            String other = UUID.randomUUID().toString();
            AcquireResult held = onLoop(second, () -> store.acquire(other, bytes("a"), lease)).value();
            long otherToken = ((AcquireResult.Acquired) held).fencingToken();
            assertThat(onLoop(second, () -> store.release(other, otherToken)).value()).isTrue();

            assertThat(store.loopsWithOwnConnection()).as("the calls went out on the shared connection").isEmpty();
            assertThat(log.otherTransportLine()).as("written once, on a loop, under the guard").contains("(NioSocketChannel)");
            assertThat(NonBlockingGuard.violations()).as(() -> NonBlockingGuard.describe(NonBlockingGuard.violations()))
                .isEmpty();
        } finally {
            group.shutdownGracefully(0, 1, TimeUnit.SECONDS).syncUninterruptibly();
        }
    }
}
