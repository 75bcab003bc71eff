package dev.idempotency.store.redis;

import io.lettuce.core.AbstractRedisClient;
import io.lettuce.core.ClientOptions;
import io.lettuce.core.resource.Delay;
import io.lettuce.core.RedisClient;
import io.lettuce.core.RedisURI;
import io.lettuce.core.TimeoutOptions;
import io.lettuce.core.api.StatefulConnection;
import io.lettuce.core.api.StatefulRedisConnection;
import io.lettuce.core.cluster.ClusterClientOptions;
import io.lettuce.core.cluster.ClusterTopologyRefreshOptions;
import io.lettuce.core.cluster.RedisClusterClient;
import io.lettuce.core.cluster.api.StatefulRedisClusterConnection;
import io.lettuce.core.cluster.api.async.RedisClusterAsyncCommands;
import io.lettuce.core.codec.ByteArrayCodec;
import io.lettuce.core.resource.ClientResources;
import io.lettuce.core.resource.EventLoopGroupProvider;
import io.lettuce.core.resource.NettyCustomizer;
import io.lettuce.core.resource.Transports;
import io.netty.bootstrap.Bootstrap;
import io.netty.channel.Channel;
import io.netty.channel.EventLoop;
import io.netty.channel.EventLoopGroup;
import io.netty.channel.IoEventLoop;
import io.netty.channel.IoHandler;
import io.netty.channel.socket.nio.NioSocketChannel;
import io.netty.handler.flush.FlushConsolidationHandler;
import io.netty.util.concurrent.EventExecutor;
import io.netty.util.concurrent.EventExecutorGroup;
import io.netty.util.concurrent.Future;
import io.netty.util.internal.ThreadExecutorMap;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.RejectedExecutionException;
import java.util.concurrent.ScheduledFuture;
import java.time.Duration;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;

/**
 * The store's own Redis connections, opened on first use without blocking anyone.
 *
 * <h2>One connection per event loop</h2>
 * A call made on a Netty event loop (the HTTP server's, where the filter runs) goes out on a
 * connection whose channel belongs to that same loop: the command is written by the calling
 * thread, and the reply is read, and the call's stage completed, on it too. A store call then
 * costs one round trip to Redis and no hand-over between threads, neither on the way out nor on
 * the way back. Such a connection is opened the first time a loop calls, so an application gets
 * at most one per event loop of its server (micronaut's default: twice the number of cores).
 * Calls from any other thread (a blocking executor, the lease keeper, a test) share one more
 * connection, on the event loops of the application's Redis client. On every connection, the
 * commands written in one turn of its loop (the acquires of all the requests the loop just read,
 * say) leave in one write: a {@link FlushConsolidationHandler} defers the flush to the end of
 * the read in progress, or to a task at the end of the turn. Redis then reads them, and answers
 * them, together, which costs both processes far fewer system calls under load. With a Redis Cluster, over a
 * Unix domain socket, with {@code idempotency.store.redis.event-loop-connections=false}, or when
 * the loop's transport is not the one Lettuce uses, every call uses that shared connection. A
 * loop of another transport is logged once, with what to change: it happens when
 * {@code netty-transport-native-epoll} is on the class path, which Lettuce then uses, while
 * micronaut's server stays on NIO (its default). Lettuce's bootstrap cannot be given the loop's
 * channel instead (its channel factory is set before any customizer runs, and its DNS resolver
 * group is bound to its own transport).
 *
 * <h2>Clients and options</h2>
 * Each connection belongs to a Lettuce client of the store's own, of the application's kind
 * (standalone or cluster), on resources that share the application client's timer, event bus,
 * tracing, address resolution, reconnect delay and latency metrics, and on the application
 * client's options, with two changes: Lettuce's per-command timeout timer is off (the store
 * bounds its calls itself, see {@link CommandDeadlines}), and commands issued while a connection
 * is down are rejected at once instead of queued (the filter answers them 503 without waiting).
 * The application's client is never changed or closed, nor is any event loop.
 *
 * <p>Commands on the shared connection are written from one thread only, the event loop of its
 * channel ({@link Link#dispatch}): Lettuce takes a lock for every write, on which writers from
 * several threads would wait for each other.
 *
 * <p>Connections are made with {@code connectAsync}: a call before its connection is up waits
 * for the one attempt in progress as a stage; a failed attempt is forgotten, so the next call
 * tries again. Once up, Lettuce reconnects a connection by itself, on the same loop.
 */
final class RedisConnector implements AutoCloseable {

    /** The store's logger: one name for operators to configure, whichever class of the store speaks. */
    private static final Logger LOG = LoggerFactory.getLogger(RedisIdempotencyStore.class);

    private final AbstractRedisClient applicationClient;
    private final List<RedisURI> uris;
    private final long tickNanos;
    private final CommandDeadlines deadlines;
    /** Whether calls on an event loop get a connection of that loop. */
    private final boolean perLoop;

    /** How long closing waits for a connection or a client, in seconds; it never waits without bound. */
    private static final long CLOSE_WAIT_SECONDS = 2;

    private final Object lock = new Object();
    private final Link shared = new Link(null);
    /** Doubling from 1 ms up to the configured cap, instead of the application client's (up to 30 s). */
    private final Delay reconnectDelay;
    private final Map<EventExecutor, Link> loopLinks = new ConcurrentHashMap<>();
    private ScheduledFuture<?> ticker; // guarded by lock
    private boolean closed; // guarded by lock
    /** Whether a call from a loop of another transport than Lettuce's has been logged (once per store). */
    private final AtomicBoolean otherTransportLogged = new AtomicBoolean();

    /**
     * @param applicationClient  a {@link RedisClient} or {@link RedisClusterClient}, whose resources and
     *                           options are borrowed
     * @param uris               the server (standalone: exactly one) or the cluster's seed nodes
     * @param deadlines          the calls' deadlines, expired by this connector's tick
     * @param tickNanos          how often deadlines are checked
     * @param eventLoopConnections whether a call on an event loop may get a connection of that loop
     * @param reconnectDelayMax  the longest wait between two reconnect attempts of a lost connection
     */
    RedisConnector(AbstractRedisClient applicationClient, List<RedisURI> uris, CommandDeadlines deadlines,
                   long tickNanos, boolean eventLoopConnections, Duration reconnectDelayMax) {
        this.reconnectDelay = Delay.exponential(Duration.ofMillis(1), reconnectDelayMax,
            2, TimeUnit.MILLISECONDS);
        this.applicationClient = Objects.requireNonNull(applicationClient, "applicationClient");
        this.uris = List.copyOf(uris);
        this.deadlines = deadlines;
        this.tickNanos = tickNanos;
        if (this.uris.isEmpty()) {
            throw new IllegalArgumentException("at least one Redis URI is needed");
        }
        if (applicationClient instanceof RedisClient && this.uris.size() != 1) {
            throw new IllegalArgumentException("a standalone Redis client takes exactly one URI, got " + uris);
        }
        if (!(applicationClient instanceof RedisClient) && !(applicationClient instanceof RedisClusterClient)) {
            throw new IllegalArgumentException("client must be a RedisClient or RedisClusterClient, was "
                + applicationClient.getClass().getName());
        }
        this.perLoop = eventLoopConnections && applicationClient instanceof RedisClient
            && this.uris.get(0).getSocket() == null && LoopTransport.SOCKET_HANDLER != null;
    }

    /** When the topology was last read again on request ({@link #topologyStale}), in nanoseconds. */
    private final java.util.concurrent.atomic.AtomicLong topologyReadAt = new java.util.concurrent.atomic.AtomicLong(
        System.nanoTime() - TimeUnit.SECONDS.toNanos(1));

    /**
     * A cluster node refused a write as no longer its slot's master, or could not be reached: the
     * cluster client reads the slots' masters again, at most every 200 ms. Standalone: nothing.
     */
    void topologyStale() {
        long last = topologyReadAt.get();
        long now = System.nanoTime();
        if (now - last < TimeUnit.MILLISECONDS.toNanos(200) || !topologyReadAt.compareAndSet(last, now)) {
            return;
        }
        AbstractRedisClient c;
        synchronized (shared) {
            c = shared.client;
        }
        if (c instanceof RedisClusterClient cluster) {
            cluster.refreshPartitionsAsync(); // failures are Lettuce's to log; the next write asks again
        }
    }

    AbstractRedisClient applicationClient() {
        return applicationClient;
    }

    List<RedisURI> uris() {
        return uris;
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

    /** @return whether calls on an event loop of Lettuce's transport get a connection of that loop */
    boolean perLoop() {
        return perLoop;
    }

    /** @return the simple name of the socket channel class Lettuce uses, e.g. {@code NioSocketChannel} */
    static String lettuceChannel() {
        return LoopTransport.CHANNEL;
    }

    /** @return the connection for a call from the calling thread: its event loop's, else the shared one */
    Link link() {
        if (perLoop) {
            EventExecutor current = ThreadExecutorMap.currentExecutor();
            if (current instanceof IoEventLoop loop) {
                Link link = loopLinks.get(loop);
                if (link != null) {
                    return link;
                }
                if (loop.isIoType(LoopTransport.SOCKET_HANDLER)) {
                    synchronized (lock) {
                        if (!closed) {
                            return loopLinks.computeIfAbsent(loop, l -> new Link((EventLoop) l));
                        }
                    }
                } else if (!otherTransportLogged.get() && otherTransportLogged.compareAndSet(false, true)) {
                    logOtherTransport();
                }
            }
        }
        return shared;
    }

    /** @return the connections open now, the shared one first if open (for tests and tools) */
    List<StatefulConnection<byte[], byte[]>> connections() {
        List<StatefulConnection<byte[], byte[]>> all = new ArrayList<>();
        for (Link link : allLinks()) {
            StatefulConnection<byte[], byte[]> c = link.connection();
            if (c != null) {
                all.add(c);
            }
        }
        return all;
    }

    /** Says that calls from event loops of another transport than Lettuce's share one connection, and what to change. */
    private static void logOtherTransport() {
        String fix = Transports.socketChannelClass() == NioSocketChannel.class
            ? "run the server's event loops on NIO too (micronaut's default: leave"
                + " micronaut.netty.event-loops.default.prefer-native-transport and"
                + " micronaut.server.netty.use-native-transport unset), or let Lettuce use the native transport the"
                + " loops use (its library on the class path, and no -Dio.lettuce.core.epoll=false)"
            : "run the server on that transport (micronaut.netty.event-loops.default.prefer-native-transport=true,"
                + " micronaut.server.netty.parent.prefer-native-transport=true and"
                + " micronaut.server.netty.use-native-transport=true), or keep Lettuce on NIO"
                + " (for epoll: -Dio.lettuce.core.epoll=false)";
        LOG.info("idempotency Redis store: event loops that call it do not run the transport Lettuce uses ({}), so"
            + " store calls made on them share one connection and are handed between threads, which costs CPU on"
            + " every request. To give each event loop a connection of its own, {}", LoopTransport.CHANNEL, fix);
    }

    /** @return the event loops whose calls go out on a connection of their own (for tests) */
    Set<EventExecutor> loopsWithOwnConnection() {
        return Set.copyOf(loopLinks.keySet());
    }

    private List<Link> allLinks() {
        List<Link> all = new ArrayList<>();
        all.add(shared);
        all.addAll(loopLinks.values());
        return all;
    }

    /** Starts the deadline tick with the first connection; {@code false} when the connector is closed. */
    private boolean opening(ClientResources resources) {
        synchronized (lock) {
            if (closed) {
                return false;
            }
            if (ticker == null) {
                ticker = resources.eventExecutorGroup().next()
                    .scheduleWithFixedDelay(deadlines::expire, tickNanos, tickNanos, TimeUnit.NANOSECONDS);
            }
            return true;
        }
    }

    /** Closes every connection and the store's own clients; the application's client, resources and loops stay. */
    @Override
    public void close() {
        synchronized (lock) {
            closed = true;
            if (ticker != null) {
                ticker.cancel(false);
            }
        }
        // the event loops' connections first: closing the shared one may release the last reference to
        // the application client's event loops, on which those of its own loops would then never close
        for (Link link : loopLinks.values()) {
            link.close();
        }
        shared.close();
    }

    /** One connection: the shared one ({@code loop == null}) or an event loop's own. */
    final class Link {

        private final EventLoop loop;
        /** An event loop's connection: its calls' deadlines, kept and expired by the loop itself. */
        private final CommandDeadlines loopDeadlines;
        private ScheduledFuture<?> loopTicker; // the loop's own
        private volatile RedisClusterAsyncCommands<byte[], byte[]> commands;
        private volatile EventExecutor channelLoop;
        private AbstractRedisClient client; // guarded by this
        private ClientResources resources; // guarded by this
        private StatefulConnection<byte[], byte[]> connection; // guarded by this
        private CompletableFuture<RedisClusterAsyncCommands<byte[], byte[]>> connecting; // guarded by this
        private volatile boolean linkClosed; // written under this

        private Link(EventLoop loop) {
            this.loop = loop;
            this.channelLoop = loop;
            this.loopDeadlines = loop == null ? null : deadlines.confined();
        }

        /**
         * Fails {@code call} unless it completes within the command timeout. A call made on this
         * link's own event loop (the usual case) joins the loop's deadlines, which only that
         * thread touches: written, answered and expired there, by a tick of the loop's own; any
         * other call joins the connector's shared deadlines.
         */
        void track(CompletableFuture<?> call) {
            if (loopDeadlines == null || linkClosed || !loop.inEventLoop()) {
                deadlines.track(call);
                return;
            }
            loopDeadlines.track(call);
            if (loopTicker == null) {
                try {
                    loopTicker = loop.scheduleWithFixedDelay(loopDeadlines::expire, tickNanos, tickNanos,
                        TimeUnit.NANOSECONDS);
                } catch (RejectedExecutionException e) {
                    deadlines.track(call); // the loop is shutting down: the shared tick takes it
                }
            }
        }

        /** @return the commands of the open connection; completes when it is up, or fails when connecting failed */
        CompletableFuture<RedisClusterAsyncCommands<byte[], byte[]>> commands() {
            RedisClusterAsyncCommands<byte[], byte[]> c = commands;
            if (c != null) {
                return CompletableFuture.completedFuture(c);
            }
            synchronized (this) {
                if (linkClosed) {
                    return CompletableFuture.failedFuture(new IllegalStateException("the Redis idempotency store is closed"));
                }
                if (commands != null) {
                    return CompletableFuture.completedFuture(commands);
                }
                if (connecting == null) {
                    connecting = connect();
                }
                return connecting;
            }
        }

        /**
         * Runs {@code command} on the event loop of the connection's channel: at once when the
         * caller is on it, else handed over (lock-free). Before the first channel exists, at once.
         */
        void dispatch(Runnable command) {
            EventExecutor l = channelLoop;
            if (l == null || l.inEventLoop()) {
                command.run();
            } else {
                l.execute(command);
            }
        }

        /**
         * Runs {@code task} after the tasks the connection's event loop has now, at the end of its
         * current turn when called on it (before the first channel exists: at once).
         */
        void atTurnEnd(Runnable task) {
            EventExecutor l = channelLoop;
            if (l == null) {
                task.run();
            } else {
                l.execute(task);
            }
        }

        synchronized StatefulConnection<byte[], byte[]> connection() {
            return connection;
        }

        // guarded by this
        @SuppressWarnings("unchecked")
        private CompletableFuture<RedisClusterAsyncCommands<byte[], byte[]>> connect() {
            if (client == null) {
                client = ownClient();
                if (!opening(resources)) {
                    return CompletableFuture.failedFuture(new IllegalStateException("the Redis idempotency store is closed"));
                }
            }
            CompletableFuture<? extends StatefulConnection<byte[], byte[]>> attempt;
            try {
                // a cluster client learns the topology first (asynchronously, from the seed nodes)
                attempt = client instanceof RedisClusterClient cluster
                    ? cluster.refreshPartitionsAsync().toCompletableFuture()
                        .thenCompose(v -> cluster.connectAsync(ByteArrayCodec.INSTANCE))
                    : ((RedisClient) client).connectAsync(ByteArrayCodec.INSTANCE, uris.get(0)).toCompletableFuture();
            } catch (RuntimeException e) {
                attempt = CompletableFuture.failedFuture(e);
            }
            CompletableFuture<RedisClusterAsyncCommands<byte[], byte[]>> result = new CompletableFuture<>();
            attempt.whenComplete((conn, failure) -> {
                boolean close = false;
                RedisClusterAsyncCommands<byte[], byte[]> opened = null;
                synchronized (this) {
                    connecting = null;
                    if (failure == null) {
                        if (linkClosed) {
                            close = true;
                        } else {
                            connection = conn;
                            opened = conn instanceof StatefulRedisClusterConnection<?, ?> cc
                                ? ((StatefulRedisClusterConnection<byte[], byte[]>) cc).async()
                                : ((StatefulRedisConnection<byte[], byte[]>) conn).async();
                            commands = opened;
                        }
                    }
                }
                if (failure != null) {
                    result.completeExceptionally(failure);
                } else if (close) {
                    conn.closeAsync();
                    result.completeExceptionally(new IllegalStateException("the Redis idempotency store is closed"));
                } else {
                    result.complete(opened);
                }
            });
            return result;
        }

        /** A client like the application's, on resources sharing the application's, with the options this store needs. */
        private AbstractRedisClient ownClient() {
            ClientResources app = applicationClient.getResources();
            NettyCustomizer appCustomizer = app.nettyCustomizer();
            resources = ClientResources.builder()
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
                        channelLoop = channel.eventLoop();
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
                return own;
            }
            RedisClient own = RedisClient.create(resources, uris.get(0));
            own.setOptions(((RedisClient) applicationClient).getOptions().mutate()
                .timeoutOptions(TimeoutOptions.create())
                .disconnectedBehavior(ClientOptions.DisconnectedBehavior.REJECT_COMMANDS).build());
            return own;
        }

        void close() {
            AbstractRedisClient c;
            ClientResources r;
            StatefulConnection<byte[], byte[]> conn;
            synchronized (this) {
                linkClosed = true;
                commands = null;
                conn = connection;
                connection = null;
                c = client;
                client = null;
                r = resources;
                resources = null;
            }
            if (loop != null) {
                // the loop's tick is the loop's own, cancelled there; no call of a closed link
                // starts it again (track sees linkClosed)
                try {
                    loop.execute(this::stopLoopTicker);
                } catch (RejectedExecutionException e) {
                    // the loop is gone, and its scheduled tasks with it
                }
            }
            // a loop that already stopped (the server shut down first) took its channel with it, and
            // nothing waits on it any more: close without waiting then, never hang the shutdown
            boolean loopGone = loop != null && loop.isShuttingDown();
            // the connection first (a cluster connection closes its nodes' with it), then the client,
            // only once that close has finished: a client shut down earlier closes the connections
            // still closing a second time, and Lettuce warns of each
            CompletableFuture<?> closing = conn == null ? CompletableFuture.completedFuture(null) : conn.closeAsync();
            if (c != null) {
                closing = closing.copy() // a copy: the timeout must not complete Lettuce's own future
                    .orTimeout(CLOSE_WAIT_SECONDS, TimeUnit.SECONDS)
                    .handle((v, failure) -> null)
                    .thenCompose(v -> c.shutdownAsync(0, CLOSE_WAIT_SECONDS, TimeUnit.SECONDS));
            }
            if (!loopGone) {
                try {
                    closing.get(2 * CLOSE_WAIT_SECONDS + 1, TimeUnit.SECONDS);
                } catch (InterruptedException e) {
                    Thread.currentThread().interrupt();
                } catch (Exception e) {
                    // closing on the way out: a failure or a slow close leaves nothing to clean up here
                }
            }
            if (r != null) {
                // only what is its own; shared event loops stay
                Future<Boolean> f = r.shutdown(0, CLOSE_WAIT_SECONDS, TimeUnit.SECONDS);
                if (!loopGone) {
                    f.awaitUninterruptibly(CLOSE_WAIT_SECONDS + 1, TimeUnit.SECONDS);
                }
            }
        }

        private void stopLoopTicker() {
            if (loopTicker != null) {
                loopTicker.cancel(false);
                loopTicker = null;
            }
        }
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

    /** The I/O handler an event loop must run for Lettuce's socket channels, or {@code null} if unknown. */
    private static final class LoopTransport {
        /** Lettuce's socket channel class, by name. */
        static final String CHANNEL = Transports.socketChannelClass().getSimpleName();
        static final Class<? extends IoHandler> SOCKET_HANDLER = socketHandler();

        @SuppressWarnings("unchecked")
        private static Class<? extends IoHandler> socketHandler() {
            try {
                String channel = Transports.socketChannelClass().getName();
                String handler = switch (channel) {
                    case "io.netty.channel.socket.nio.NioSocketChannel" -> "io.netty.channel.nio.NioIoHandler";
                    case "io.netty.channel.epoll.EpollSocketChannel" -> "io.netty.channel.epoll.EpollIoHandler";
                    case "io.netty.channel.kqueue.KQueueSocketChannel" -> "io.netty.channel.kqueue.KQueueIoHandler";
                    case "io.netty.channel.uring.IoUringSocketChannel" -> "io.netty.channel.uring.IoUringIoHandler";
                    default -> null;
                };
                return handler == null ? null
                    : (Class<? extends IoHandler>) Class.forName(handler, false, RedisConnector.class.getClassLoader());
            } catch (ClassNotFoundException | LinkageError e) {
                return null; // a Netty without I/O handlers (before 4.2): the shared connection only
            }
        }
    }
}
