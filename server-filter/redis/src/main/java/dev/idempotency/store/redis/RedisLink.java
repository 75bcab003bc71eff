package dev.idempotency.store.redis;

import io.lettuce.core.AbstractRedisClient;
import io.lettuce.core.RedisClient;
import io.lettuce.core.api.StatefulConnection;
import io.lettuce.core.api.StatefulRedisConnection;
import io.lettuce.core.cluster.RedisClusterClient;
import io.lettuce.core.cluster.api.StatefulRedisClusterConnection;
import io.lettuce.core.cluster.api.async.RedisClusterAsyncCommands;
import io.lettuce.core.codec.ByteArrayCodec;
import io.lettuce.core.resource.ClientResources;
import io.netty.channel.EventLoop;
import io.netty.util.concurrent.EventExecutor;
import io.netty.util.concurrent.Future;

import java.util.concurrent.CompletableFuture;
import java.util.concurrent.RejectedExecutionException;
import java.util.concurrent.ScheduledFuture;
import java.util.concurrent.TimeUnit;

/**
 * One of the store's connections: the shared one ({@code loop == null}) or an event loop's own.
 * It connects on first use without blocking, forgets a failed attempt so the next call tries
 * again, and bounds every call it {@linkplain #track tracks} by the command timeout.
 */
final class RedisLink {

    /** How long closing waits for a connection or a client, in seconds; it never waits without bound. */
    private static final long CLOSE_WAIT_SECONDS = 2;

    private final RedisConnector connector;

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

    RedisLink(RedisConnector connector, EventLoop loop) {
        this.connector = connector;
        this.loop = loop;
        this.channelLoop = loop;
        this.loopDeadlines = loop == null ? null : connector.deadlines().confined();
    }

    /**
     * Fails {@code call} unless it completes within the command timeout. A call made on this
     * link's own event loop (the usual case) joins the loop's deadlines, which only that
     * thread touches: written, answered and expired there, by a tick of the loop's own; any
     * other call joins the connector's shared deadlines.
     */
    void track(CompletableFuture<?> call) {
        if (loopDeadlines == null || linkClosed || !loop.inEventLoop()) {
            connector.deadlines().track(call);
            return;
        }
        loopDeadlines.track(call);
        if (loopTicker == null) {
            try {
                loopTicker = loop.scheduleWithFixedDelay(loopDeadlines::expire, connector.tickNanos(), connector.tickNanos(),
                    TimeUnit.NANOSECONDS);
            } catch (RejectedExecutionException e) {
                connector.deadlines().track(call); // the loop is shutting down: the shared tick takes it
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

    /** @return the store's own client of this link, {@code null} before the first connect or after close */
    synchronized AbstractRedisClient client() {
        return client;
    }

    synchronized StatefulConnection<byte[], byte[]> connection() {
        return connection;
    }

    // guarded by this
    @SuppressWarnings("unchecked")
    private CompletableFuture<RedisClusterAsyncCommands<byte[], byte[]>> connect() {
        if (client == null) {
            OwnClients.Own own = OwnClients.create(connector.applicationClient(), connector.uris(), loop,
                connector.reconnectDelay(), channel -> channelLoop = channel.eventLoop());
            client = own.client();
            resources = own.resources();
            if (!connector.opening(resources)) {
                return CompletableFuture.failedFuture(new IllegalStateException("the Redis idempotency store is closed"));
            }
        }
        CompletableFuture<? extends StatefulConnection<byte[], byte[]>> attempt;
        try {
            // a cluster client learns the topology first (asynchronously, from the seed nodes)
            attempt = client instanceof RedisClusterClient cluster
                ? cluster.refreshPartitionsAsync().toCompletableFuture()
                    .thenCompose(v -> cluster.connectAsync(ByteArrayCodec.INSTANCE))
                : ((RedisClient) client).connectAsync(ByteArrayCodec.INSTANCE, connector.uris().get(0)).toCompletableFuture();
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
