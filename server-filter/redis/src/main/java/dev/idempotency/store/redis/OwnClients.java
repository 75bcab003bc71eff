package dev.idempotency.store.redis;

import io.lettuce.core.AbstractRedisClient;
import io.lettuce.core.ClientOptions;
import io.lettuce.core.RedisClient;
import io.lettuce.core.RedisURI;
import io.lettuce.core.TimeoutOptions;
import io.lettuce.core.cluster.ClusterClientOptions;
import io.lettuce.core.cluster.ClusterTopologyRefreshOptions;
import io.lettuce.core.cluster.RedisClusterClient;
import io.lettuce.core.resource.ClientResources;
import io.lettuce.core.resource.Delay;
import io.lettuce.core.resource.EventLoopGroupProvider;
import io.lettuce.core.resource.NettyCustomizer;
import io.netty.bootstrap.Bootstrap;
import io.netty.channel.Channel;
import io.netty.channel.EventLoop;
import io.netty.channel.EventLoopGroup;
import io.netty.handler.flush.FlushConsolidationHandler;
import io.netty.util.concurrent.EventExecutorGroup;
import io.netty.util.concurrent.Future;

import java.time.Duration;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.function.Consumer;

/**
 * The store's own Lettuce clients: one of the application's kind (standalone or cluster), on
 * resources that share the application client's timer, event bus, tracing, address resolution
 * and latency metrics, with the application's options but no per-command timeout timer and
 * commands rejected at once while disconnected. The application's client is never changed.
 */
final class OwnClients {

    private OwnClients() {
    }

    /** A client of the store's own and the resources made for it (closed with it; shared parts stay). */
    record Own(AbstractRedisClient client, ClientResources resources) {
    }

    /**
     * The topology refresh of the store's own cluster client when the application's client has
     * none (Lettuce's default: neither periodic nor adaptive): after a master fails over, a
     * refused connection, a {@code MOVED} or a failed reconnect refreshes the slots' masters (at
     * most once a second), and every ten seconds a refresh runs anyway. Without it the store
     * would keep writing to a master that is gone, and its {@code WAIT}s would go to the wrong node.
     */
    private static final ClusterTopologyRefreshOptions FOLLOW_FAILOVERS = ClusterTopologyRefreshOptions.builder()
        .enableAllAdaptiveRefreshTriggers()
        .adaptiveRefreshTriggersTimeout(Duration.ofSeconds(1))
        .refreshTriggersReconnectAttempts(1)
        .enablePeriodicRefresh(Duration.ofSeconds(10))
        .build();

    private static boolean refreshesTopologyOnlyOnRequest(ClusterTopologyRefreshOptions options) {
        return options == null || (!options.isPeriodicRefreshEnabled() && options.getAdaptiveRefreshTriggers().isEmpty());
    }

    /**
     * A client like the application's, on resources sharing the application's, with the options this store needs.
     *
     * @param loop      the event loop the client's connection must use, or {@code null} for the application client's
     * @param onChannel told of each channel the client opens, once it is initialized
     */
    static Own create(AbstractRedisClient applicationClient, List<RedisURI> uris, EventLoop loop, Delay reconnectDelay,
                      Consumer<Channel> onChannel) {
        ClientResources app = applicationClient.getResources();
        NettyCustomizer appCustomizer = app.nettyCustomizer();
        ClientResources resources = ClientResources.builder()
            .eventLoopGroupProvider(loop == null ? app.eventLoopGroupProvider() : new SingleLoop(loop))
            .eventExecutorGroup(app.eventExecutorGroup())
            .timer(app.timer())
            .eventBus(app.eventBus())
            .tracing(app.tracing())
            // a store that is back is used within the cap, not after a back-off of up to 30 s
            .reconnectDelay(reconnectDelay)
            .socketAddressResolver(app.socketAddressResolver())
            .addressResolverGroup(app.addressResolverGroup())
            .commandLatencyRecorder(app.commandLatencyRecorder())
            .nettyCustomizer(new NettyCustomizer() {
                @Override
                public void afterBootstrapInitialized(Bootstrap bootstrap) {
                    appCustomizer.afterBootstrapInitialized(bootstrap);
                }

                @Override
                public void afterChannelInitialized(Channel channel) {
                    appCustomizer.afterChannelInitialized(channel);
                    // commands written in one turn of the loop (many requests' acquires, say)
                    // leave in one write: the flush is deferred to the end of a read on this
                    // channel, or to a task at the end of the loop's turn
                    channel.pipeline().addFirst(new FlushConsolidationHandler(
                        FlushConsolidationHandler.DEFAULT_EXPLICIT_FLUSH_AFTER_FLUSHES, true));
                    onChannel.accept(channel);
                }
            })
            .build();
        if (applicationClient instanceof RedisClusterClient cluster) {
            RedisClusterClient own = RedisClusterClient.create(resources, uris);
            ClientOptions base = cluster.getOptions();
            ClusterClientOptions.Builder options = base instanceof ClusterClientOptions cco
                ? cco.mutate() : ClusterClientOptions.builder(base);
            if (base instanceof ClusterClientOptions cco && refreshesTopologyOnlyOnRequest(cco.getTopologyRefreshOptions())) {
                options.topologyRefreshOptions(FOLLOW_FAILOVERS);
            }
            own.setOptions(options.timeoutOptions(TimeoutOptions.create())
                .disconnectedBehavior(ClientOptions.DisconnectedBehavior.REJECT_COMMANDS).build());
            return new Own(own, resources);
        }
        RedisClient own = RedisClient.create(resources, uris.get(0));
        own.setOptions(((RedisClient) applicationClient).getOptions().mutate()
            .timeoutOptions(TimeoutOptions.create())
            .disconnectedBehavior(ClientOptions.DisconnectedBehavior.REJECT_COMMANDS).build());
        return new Own(own, resources);
    }

    /** Lends Lettuce one event loop, which it never shuts down: the loop belongs to the server. */
    private static final class SingleLoop implements EventLoopGroupProvider {
        private final EventLoop loop;

        SingleLoop(EventLoop loop) {
            this.loop = loop;
        }

        @Override
        @SuppressWarnings("unchecked")
        public <T extends EventLoopGroup> T allocate(Class<T> type) {
            return (T) loop; // an event loop is a group of one; Lettuce uses it as an EventLoopGroup
        }

        @Override
        public int threadPoolSize() {
            return 1;
        }

        @Override
        public Future<Boolean> release(EventExecutorGroup eventLoopGroup, long quietPeriod, long timeout, TimeUnit unit) {
            return loop.newSucceededFuture(Boolean.TRUE);
        }

        @Override
        public Future<Boolean> shutdown(long quietPeriod, long timeout, TimeUnit timeUnit) {
            return loop.newSucceededFuture(Boolean.TRUE);
        }
    }
}
