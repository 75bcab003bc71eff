package dev.idempotency.benchmarks.load;

import dev.idempotency.store.redis.RedisIdempotencyStore;
import dev.idempotency.store.redis.RedisIdempotencyStoreConfigurationProperties;
import dev.idempotency.testsupport.RedisWire;
import io.lettuce.core.RedisClient;
import io.lettuce.core.RedisURI;
import io.netty.bootstrap.Bootstrap;
import io.netty.buffer.ByteBuf;
import io.netty.buffer.Unpooled;
import io.netty.channel.Channel;
import io.netty.channel.ChannelHandlerContext;
import io.netty.channel.ChannelInboundHandlerAdapter;
import io.netty.channel.ChannelOption;
import io.netty.channel.EventLoop;
import io.netty.channel.MultiThreadIoEventLoopGroup;
import io.netty.channel.nio.NioIoHandler;
import io.netty.channel.socket.nio.NioSocketChannel;

import java.net.InetSocketAddress;
import java.net.URI;
import java.nio.charset.StandardCharsets;
import java.time.Clock;
import java.util.Arrays;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;

/**
 * What one Redis round trip costs each kind of caller, alone: a {@code PING}, one at a time,
 * {@code --count=} times (default 20,000) per caller after 50,000 that are not timed, the median printed. The callers: a blocking
 * socket (the load benchmark's own {@code PING} measurement); a bare Netty NIO channel, written in a task
 * of its event loop and answered in {@code channelRead}; the Redis idempotency store on that event
 * loop's own connection (Lettuce, the store's deadline and decoding); the store from a plain thread,
 * on its shared connection. Every call of the store on the loop starts in a task of the loop and
 * ends when its stage completes. {@code --redis=} (default {@code redis://127.0.0.1:6379}). No HTTP service runs:
 * the difference to the load benchmark's store floor is what the HTTP path around a round trip
 * adds.
 */
public final class RoundTripBenchmark {

    private static final byte[] PING = "PING\r\n".getBytes(StandardCharsets.US_ASCII);
    /**
     * Calls each caller makes before those it times: without them the store, measured with its
     * code not yet compiled, read 10 µs slower than it is. 5,000 were not enough on a later
     * machine (the store from its event loop read 61-81 µs after them, 26-27 µs after 50,000).
     */
    private static final int WARM_UP = 50_000;

    private RoundTripBenchmark() {
    }

    /**
     * @param args {@code --count=}, {@code --redis=}
     * @throws Exception when Redis cannot be reached or a call fails
     */
    public static void main(String[] args) throws Exception {
        int count = 20_000;
        URI redis = URI.create("redis://127.0.0.1:6379");
        for (String a : args) {
            if (a.startsWith("--count=")) {
                count = Integer.parseInt(a.substring("--count=".length()));
            } else if (a.startsWith("--redis=")) {
                redis = URI.create(a.substring("--redis=".length()));
            } else {
                throw new IllegalArgumentException("unknown option " + a + " (--count=, --redis=)");
            }
        }
        System.out.printf("Redis PING round trip, median of %,d in a row:%n", count);
        System.out.printf("  blocking socket                         %7.1f µs%n", StoreFloors.redisRoundTripMicros(redis, count));
        MultiThreadIoEventLoopGroup group = new MultiThreadIoEventLoopGroup(1, NioIoHandler.newFactory());
        RedisClient client = RedisClient.create(RedisURI.create(redis.toString()));
        try {
            EventLoop loop = group.next();
            System.out.printf("  Netty NIO channel, from its event loop  %7.1f µs%n", micros(bareChannel(loop, redis, count)));
            try (RedisIdempotencyStore store = new RedisIdempotencyStore(client, List.of(RedisURI.create(redis.toString())),
                    Clock.systemUTC(), new RedisIdempotencyStoreConfigurationProperties())) {
                long[] onLoop = new long[count];
                for (int i = -WARM_UP; i < count; i++) {
                    CompletableFuture<Long> took = new CompletableFuture<>();
                    loop.execute(() -> {
                        long start = System.nanoTime();
                        store.probe().whenComplete((v, e) -> took.complete(e != null ? -1 : System.nanoTime() - start));
                    });
                    long nanos = checked(took.get(5, TimeUnit.SECONDS));
                    if (i >= 0) {
                        onLoop[i] = nanos;
                    }
                }
                System.out.printf("  the store, from the event loop          %7.1f µs%n", micros(onLoop));
                long[] shared = new long[count];
                for (int i = -WARM_UP; i < count; i++) {
                    long start = System.nanoTime();
                    store.probe().toCompletableFuture().get(5, TimeUnit.SECONDS);
                    if (i >= 0) {
                        shared[i] = System.nanoTime() - start;
                    }
                }
                System.out.printf("  the store, from a plain thread          %7.1f µs%n", micros(shared));
            }
        } finally {
            client.shutdown(0, 2, TimeUnit.SECONDS);
            group.shutdownGracefully(0, 1, TimeUnit.SECONDS).syncUninterruptibly();
        }
    }

    private static long[] bareChannel(EventLoop loop, URI redis, int count) throws Exception {
        // the reply's handler completes the call in flight; one at a time, all on the loop
        @SuppressWarnings("unchecked")
        CompletableFuture<Object>[] inFlight = new CompletableFuture[1];
        Channel channel = new Bootstrap().group(loop).channel(NioSocketChannel.class)
            .option(ChannelOption.TCP_NODELAY, true)
            .handler(new ChannelInboundHandlerAdapter() {
                @Override
                public void channelRead(ChannelHandlerContext ctx, Object msg) {
                    ByteBuf reply = (ByteBuf) msg; // "+PONG\r\n" and "+OK\r\n" come in one read on loopback
                    CompletableFuture<Object> call = inFlight[0];
                    inFlight[0] = null;
                    if (reply.getByte(reply.readerIndex()) == '+') {
                        call.complete(null);
                    } else {
                        call.completeExceptionally(new IllegalStateException("Redis answered "
                            + reply.toString(StandardCharsets.UTF_8).trim()));
                    }
                    reply.release();
                }
            })
            .connect(new InetSocketAddress(redis.getHost(), RedisWire.port(redis))).sync().channel();
        try {
            byte[] auth = RedisWire.auth(redis);
            if (auth != null) { // the URI's credentials, as the blocking socket and the store send them
                CompletableFuture<Object> authenticated = new CompletableFuture<>();
                loop.submit(() -> {
                    inFlight[0] = authenticated;
                    channel.writeAndFlush(Unpooled.wrappedBuffer(auth));
                }).sync();
                authenticated.get(5, TimeUnit.SECONDS);
            }
            long[] took = new long[count];
            for (int i = -WARM_UP; i < count; i++) {
                CompletableFuture<Long> done = new CompletableFuture<>();
                loop.execute(() -> {
                    long start = System.nanoTime();
                    CompletableFuture<Object> call = new CompletableFuture<>();
                    call.whenComplete((v, e) -> {
                        if (e != null) {
                            done.completeExceptionally(e);
                        } else {
                            done.complete(System.nanoTime() - start);
                        }
                    });
                    inFlight[0] = call;
                    channel.writeAndFlush(Unpooled.wrappedBuffer(PING));
                });
                long nanos = done.get(5, TimeUnit.SECONDS);
                if (i >= 0) {
                    took[i] = nanos;
                }
            }
            return took;
        } finally {
            channel.close().syncUninterruptibly();
        }
    }

    private static long checked(long nanos) {
        if (nanos < 0) {
            throw new IllegalStateException("a PING through the store failed");
        }
        return nanos;
    }

    private static double micros(long[] nanos) {
        long[] sorted = nanos.clone();
        Arrays.sort(sorted);
        return sorted[sorted.length / 2] / 1e3;
    }
}
