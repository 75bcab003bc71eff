package dev.idempotency.store.redis;

import io.lettuce.core.AbstractRedisClient;
import io.lettuce.core.ClientOptions;
import io.lettuce.core.RedisClient;
import io.lettuce.core.RedisURI;
import io.lettuce.core.TimeoutOptions;
import io.lettuce.core.api.StatefulConnection;
import io.lettuce.core.api.StatefulRedisConnection;
import io.lettuce.core.api.async.RedisScriptingAsyncCommands;
import io.lettuce.core.cluster.ClusterClientOptions;
import io.lettuce.core.cluster.RedisClusterClient;
import io.lettuce.core.cluster.api.StatefulRedisClusterConnection;
import io.lettuce.core.codec.ByteArrayCodec;
import io.lettuce.core.resource.ClientResources;
import io.lettuce.core.resource.NettyCustomizer;
import io.netty.bootstrap.Bootstrap;
import io.netty.channel.Channel;
import io.netty.util.concurrent.EventExecutor;

import java.util.List;
import java.util.Objects;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ScheduledFuture;
import java.util.concurrent.TimeUnit;

/**
 * The store's own Redis connection, opened on first use without blocking anyone.
 *
 * <p>It uses a Lettuce client of its own, of the application's kind (standalone or cluster),
 * on resources that share the application client's event loops, timer, event bus, tracing,
 * address resolution, reconnect delay and latency metrics, and on the application client's
 * options, with two changes: Lettuce's per-command timeout timer is off (the store bounds its
 * calls itself, see {@link CommandDeadlines}), and commands issued while the connection is down
 * are rejected at once instead of queued (the filter answers them 503 without waiting). The
 * application's client is never changed or closed.
 *
 * <p>Commands are written from one thread only, the event loop of the connection's channel
 * ({@link #dispatch}): Lettuce takes a lock for every write, on which writers from several
 * threads (the HTTP server's event loops) would wait for each other. Handing a command to that
 * loop is what Netty does for a write from another thread anyway, so it costs no extra hop.
 *
 * <p>The connection is made with {@code connectAsync}: a call before it is up waits for the one
 * attempt in progress as a stage; a failed attempt is forgotten, so the next call tries again.
 * Once up, Lettuce reconnects it by itself.
 */
final class RedisConnector implements AutoCloseable {

    private final AbstractRedisClient applicationClient;
    private final List<RedisURI> uris;
    private final long tickNanos;
    private final CommandDeadlines deadlines;

    private final Object lock = new Object();
    private volatile RedisScriptingAsyncCommands<byte[], byte[]> commands;
    private AbstractRedisClient client; // guarded by lock
    private ClientResources resources; // guarded by lock
    private volatile EventExecutor channelLoop;
    private StatefulConnection<byte[], byte[]> connection; // guarded by lock
    private CompletableFuture<RedisScriptingAsyncCommands<byte[], byte[]>> connecting; // guarded by lock
    private ScheduledFuture<?> ticker; // guarded by lock
    private boolean closed; // guarded by lock

    /**
     * @param applicationClient a {@link RedisClient} or {@link RedisClusterClient}, whose resources and
     *                          options are borrowed
     * @param uris              the server (standalone: exactly one) or the cluster's seed nodes
     * @param deadlines         the calls' deadlines, expired by this connector's tick
     * @param tickNanos         how often deadlines are checked
     */
    RedisConnector(AbstractRedisClient applicationClient, List<RedisURI> uris, CommandDeadlines deadlines,
                   long tickNanos) {
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
    }

    /** @return the commands of the open connection; completes when it is up, or fails when connecting failed */
    CompletableFuture<RedisScriptingAsyncCommands<byte[], byte[]>> commands() {
        RedisScriptingAsyncCommands<byte[], byte[]> c = commands;
        if (c != null) {
            return CompletableFuture.completedFuture(c);
        }
        synchronized (lock) {
            if (closed) {
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
     * Runs {@code command} on the event loop of the connection's channel: at once when the caller
     * is on it, else handed over (lock-free). Before the first channel exists, at once.
     */
    void dispatch(Runnable command) {
        EventExecutor loop = channelLoop;
        if (loop == null || loop.inEventLoop()) {
            command.run();
        } else {
            loop.execute(command);
        }
    }

    /** @return the open connection, if any (for tests and tools) */
    StatefulConnection<byte[], byte[]> connection() {
        synchronized (lock) {
            return connection;
        }
    }

    // guarded by lock
    @SuppressWarnings("unchecked")
    private CompletableFuture<RedisScriptingAsyncCommands<byte[], byte[]>> connect() {
        if (client == null) {
            client = ownClient();
            ticker = resources.eventExecutorGroup().next()
                .scheduleWithFixedDelay(deadlines::expire, tickNanos, tickNanos, TimeUnit.NANOSECONDS);
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
        CompletableFuture<RedisScriptingAsyncCommands<byte[], byte[]>> result = new CompletableFuture<>();
        attempt.whenComplete((conn, failure) -> {
            boolean close = false;
            synchronized (lock) {
                connecting = null;
                if (failure == null) {
                    if (closed) {
                        close = true;
                    } else {
                        connection = conn;
                        commands = conn instanceof StatefulRedisClusterConnection<?, ?> cc
                            ? ((StatefulRedisClusterConnection<byte[], byte[]>) cc).async()
                            : ((StatefulRedisConnection<byte[], byte[]>) conn).async();
                    }
                }
            }
            if (failure != null) {
                result.completeExceptionally(failure);
            } else if (close) {
                conn.closeAsync();
                result.completeExceptionally(new IllegalStateException("the Redis idempotency store is closed"));
            } else {
                result.complete(commands);
            }
        });
        return result;
    }

    /** A client like the application's, on resources sharing the application's, with the options this store needs. */
    private AbstractRedisClient ownClient() {
        ClientResources app = applicationClient.getResources();
        NettyCustomizer appCustomizer = app.nettyCustomizer();
        resources = ClientResources.builder()
            .eventLoopGroupProvider(app.eventLoopGroupProvider())
            .eventExecutorGroup(app.eventExecutorGroup())
            .timer(app.timer())
            .eventBus(app.eventBus())
            .tracing(app.tracing())
            .reconnectDelay(app.reconnectDelay())
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
                    channelLoop = channel.eventLoop();
                }
            })
            .build();
        if (applicationClient instanceof RedisClusterClient cluster) {
            RedisClusterClient own = RedisClusterClient.create(resources, uris);
            ClientOptions base = cluster.getOptions();
            ClusterClientOptions.Builder options = base instanceof ClusterClientOptions cco
                ? cco.mutate() : ClusterClientOptions.builder(base);
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

    /** Closes the connection and the store's own client; the application's client and resources stay. */
    @Override
    public void close() {
        AbstractRedisClient c;
        ClientResources r;
        StatefulConnection<byte[], byte[]> conn;
        synchronized (lock) {
            closed = true;
            commands = null;
            conn = connection;
            connection = null;
            c = client;
            client = null;
            r = resources;
            resources = null;
            if (ticker != null) {
                ticker.cancel(false);
            }
        }
        if (conn != null) {
            conn.close();
        }
        if (c != null) {
            c.shutdown(0, 2, TimeUnit.SECONDS);
        }
        if (r != null) {
            r.shutdown(0, 2, TimeUnit.SECONDS); // only what is its own; the shared event loops stay
        }
    }
}
