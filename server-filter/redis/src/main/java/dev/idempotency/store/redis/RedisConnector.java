package dev.idempotency.store.redis;

import io.lettuce.core.AbstractRedisClient;
import io.lettuce.core.resource.Delay;
import io.lettuce.core.RedisClient;
import io.lettuce.core.RedisURI;
import io.lettuce.core.api.StatefulConnection;
import io.lettuce.core.cluster.RedisClusterClient;
import io.lettuce.core.resource.ClientResources;
import io.lettuce.core.resource.Transports;
import io.netty.channel.EventLoop;
import io.netty.channel.IoEventLoop;
import io.netty.channel.socket.nio.NioSocketChannel;
import io.netty.handler.flush.FlushConsolidationHandler;
import io.netty.util.concurrent.EventExecutor;
import io.netty.util.internal.ThreadExecutorMap;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ScheduledFuture;
import java.time.Duration;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicLong;

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
 * Each connection ({@link RedisLink}) belongs to a Lettuce client of the store's own
 * ({@link OwnClients}), of the application's kind, whose per-command timeout timer is off (the
 * store bounds its calls itself, see {@link CommandDeadlines}) and which rejects commands at once
 * while disconnected. The application's client is never changed or closed, nor is any event loop.
 *
 * <p>Commands on the shared connection are written from one thread only, the event loop of its
 * channel ({@link RedisLink#dispatch}): Lettuce takes a lock for every write, on which writers from
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

    private final Object lock = new Object();
    private final RedisLink shared = new RedisLink(this, null);
    /** Doubling from 1 ms up to the configured cap, instead of the application client's (up to 30 s). */
    private final Delay reconnectDelay;
    private final Map<EventExecutor, RedisLink> loopLinks = new ConcurrentHashMap<>();
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
    private final AtomicLong topologyReadAt = new AtomicLong(
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
        AbstractRedisClient c = shared.client();
        if (c instanceof RedisClusterClient cluster) {
            cluster.refreshPartitionsAsync(); // failures are Lettuce's to log; the next write asks again
        }
    }

    CommandDeadlines deadlines() {
        return deadlines;
    }

    long tickNanos() {
        return tickNanos;
    }

    Delay reconnectDelay() {
        return reconnectDelay;
    }

    AbstractRedisClient applicationClient() {
        return applicationClient;
    }

    List<RedisURI> uris() {
        return uris;
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
    RedisLink link() {
        if (perLoop) {
            EventExecutor current = ThreadExecutorMap.currentExecutor();
            if (current instanceof IoEventLoop loop) {
                RedisLink link = loopLinks.get(loop);
                if (link != null) {
                    return link;
                }
                if (loop.isIoType(LoopTransport.SOCKET_HANDLER)) {
                    synchronized (lock) {
                        if (!closed) {
                            return loopLinks.computeIfAbsent(loop, l -> new RedisLink(this, (EventLoop) l));
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
        for (RedisLink link : allLinks()) {
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

    private List<RedisLink> allLinks() {
        List<RedisLink> all = new ArrayList<>();
        all.add(shared);
        all.addAll(loopLinks.values());
        return all;
    }

    /** Starts the deadline tick with the first connection; {@code false} when the connector is closed. */
    boolean opening(ClientResources resources) {
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
        for (RedisLink link : loopLinks.values()) {
            link.close();
        }
        shared.close();
    }
}
