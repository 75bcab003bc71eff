package dev.idempotency.store.redis;

import io.lettuce.core.api.StatefulRedisConnection;
import io.lettuce.core.cluster.SlotHash;
import io.lettuce.core.cluster.api.StatefulRedisClusterConnection;
import io.lettuce.core.cluster.api.async.RedisAdvancedClusterAsyncCommands;
import io.lettuce.core.cluster.api.async.RedisClusterAsyncCommands;
import io.lettuce.core.cluster.models.partitions.RedisClusterNode;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.Executor;
import java.util.concurrent.TimeUnit;
import java.util.function.Function;

/**
 * A write followed by Redis {@code WAIT} ({@code idempotency.store.redis.wait-replicas}): how many
 * replicas have it. {@code WAIT} counts the replicas that have every write of the connection it
 * is sent on, so it goes on the connection of the write, pipelined behind it (one {@code WAIT}
 * behind all the writes of one turn of the connection's event loop): one round trip to the
 * primary plus the primary's round trip to its replicas. On a Redis Cluster both go to the
 * master of the key's slot, on the node connection that Lettuce's routing uses for that master.
 *
 * <p>A script sent as {@code EVALSHA} that the server does not know yet is sent again as
 * {@code EVAL} once the refusal comes back, which is after the {@code WAIT} pipelined behind
 * it: replies come back in order, so when the {@code WAIT}'s reply finds the write not answered
 * yet, the write came later, and it is waited for again.
 *
 * <p>{@code WAIT} blocks the connection it is sent on: while it waits, the commands pipelined
 * behind it wait too. So once a {@code WAIT} comes back short (a replica is missing: failing over,
 * resyncing, cut off), the connection is known to be short of replicas for
 * {@value #SHORT_PROBE_MILLIS} ms: writes that must be confirmed before they count (acquires) are
 * not sent at all, and other writes are sent without a {@code WAIT} and reported as unconfirmed.
 * The first write after that window waits again and so probes whether the replicas are back.
 * Without this, a primary without replicas would answer one write per {@code wait-timeout} per
 * connection, and every other command would run into the command timeout.
 */
final class ReplicaWait {

    /** How long a connection whose {@code WAIT} came back short is not waited on again. */
    static final long SHORT_PROBE_MILLIS = 250;

    /** The reply of a write that was not sent: its connection is known to be short of replicas. */
    static final Object NOT_SENT = new Object();

    /**
     * A write's reply ({@link #NOT_SENT} when it was not sent), the connection it went out on, how
     * many replicas confirmed it ({@code -1}: the {@code WAIT} failed, with {@code waitFailure}),
     * and whether it was waited for at all (not when its connection was known to be short).
     */
    record Written(Object reply, RedisClusterAsyncCommands<byte[], byte[]> target, long replicas, Throwable waitFailure,
                   boolean waited) {
    }

    /** A connection short of replicas until {@code untilNanos}, when it had {@code replicas}. */
    private record Shortage(long untilNanos, long replicas) {
    }

    private final int replicas;
    private final long timeoutMillis;
    /** Asks the cluster client to read the slots' masters again (rate limited by the connector). */
    private final Runnable topologyStale;
    private final Map<RedisClusterAsyncCommands<byte[], byte[]>, Shortage> shortOf = new ConcurrentHashMap<>();
    /** Per connection, the {@code WAIT} that the writes of its loop's current turn share, until it is sent. */
    private final Map<RedisClusterAsyncCommands<byte[], byte[]>, CompletableFuture<Long>> turnWaits = new ConcurrentHashMap<>();

    /**
     * @param replicas      how many replicas must confirm a write; more than zero
     * @param timeout       how long one {@code WAIT} waits
     * @param topologyStale called when a cluster node refused a write as no longer its slot's
     *                      master, or could not be reached
     */
    ReplicaWait(int replicas, Duration timeout, Runnable topologyStale) {
        if (replicas <= 0) {
            throw new IllegalArgumentException("a wait for replicas needs at least one, was " + replicas);
        }
        this.replicas = replicas;
        this.timeoutMillis = timeout.toMillis();
        this.topologyStale = topologyStale;
    }

    int replicas() {
        return replicas;
    }

    long timeoutMillis() {
        return timeoutMillis;
    }

    /** @return whether {@code written} reached as many replicas as required */
    boolean confirmed(Written written) {
        return written.replicas() >= replicas;
    }

    /**
     * Sends {@code write} on the connection of {@code key}'s primary, and {@code WAIT} behind it.
     *
     * @param unlessShort whether the write is not sent at all when its connection is known to be
     *                    short of replicas (then the reply is {@link #NOT_SENT})
     * @return the write's reply with the replicas' count; fails only when the write failed
     */
    CompletableFuture<Object> send(RedisClusterAsyncCommands<byte[], byte[]> commands, byte[] key, boolean unlessShort,
                                   Function<RedisClusterAsyncCommands<byte[], byte[]>, CompletableFuture<Object>> write,
                                   Executor turnEnd) {
        // a cluster's node connections are written from any thread: each write waits on its own
        Executor batching = commands instanceof RedisAdvancedClusterAsyncCommands ? null : turnEnd;
        return primary(commands, key).thenCompose(target -> sendTo(target, commands, write, unlessShort, true, batching));
    }

    /**
     * The write and its {@code WAIT} on {@code target}. A cluster node that no longer serves the
     * key's slot (a failover the store's topology has not caught up with yet) answers
     * {@code MOVED}: the write is sent once more to the node named there, and the topology read again.
     */
    private CompletableFuture<Object> sendTo(RedisClusterAsyncCommands<byte[], byte[]> target,
                                             RedisClusterAsyncCommands<byte[], byte[]> commands,
                                             Function<RedisClusterAsyncCommands<byte[], byte[]>, CompletableFuture<Object>> write,
                                             boolean unlessShort, boolean followMoved, Executor turnEnd) {
        Shortage shortage = shortOf.get(target);
        if (shortage != null && System.nanoTime() - shortage.untilNanos() >= 0) {
            shortOf.remove(target, shortage); // the window is over: this write probes
            shortage = null;
        }
        CompletableFuture<Object> sent;
        if (shortage == null) {
            sent = waited(target, write, turnEnd);
        } else if (unlessShort) {
            return CompletableFuture.completedFuture(new Written(NOT_SENT, target, shortage.replicas(), null, false));
        } else {
            long known = shortage.replicas();
            sent = write.apply(target).thenApply(value -> new Written(value, target, known, null, false));
        }
        if (!(commands instanceof RedisAdvancedClusterAsyncCommands<byte[], byte[]> cluster)) {
            return sent;
        }
        return sent.exceptionallyCompose(failure -> {
            topologyStale.run();
            String message = String.valueOf(cause(failure).getMessage());
            if (!followMoved || !message.startsWith("MOVED ")) {
                return CompletableFuture.failedFuture(cause(failure));
            }
            String[] moved = message.split(" ");
            int colon = moved[2].lastIndexOf(':');
            return cluster.getStatefulConnection()
                .getConnectionAsync(moved[2].substring(0, colon), Integer.parseInt(moved[2].substring(colon + 1).trim()))
                .thenCompose(node -> sendTo(node.async(), commands, write, unlessShort, false, null));
        });
    }

    /**
     * The write, and a {@code WAIT} behind it. With {@code turnEnd} (the connection's event loop),
     * the writes of one turn of that loop share one {@code WAIT}, sent by a task at the end of the
     * turn: {@code WAIT} covers every earlier write of its connection, and it holds the connection
     * while it waits, so one per write would let each connection make one write per replica
     * round trip. Without it (a cluster's node connections), each write gets its own.
     */
    private CompletableFuture<Object> waited(RedisClusterAsyncCommands<byte[], byte[]> target,
                                             Function<RedisClusterAsyncCommands<byte[], byte[]>, CompletableFuture<Object>> write,
                                             Executor turnEnd) {
        CompletableFuture<Object> reply = write.apply(target);
        CompletableFuture<Long> acks = turnEnd == null ? await(target) : turnWait(target, turnEnd);
        // replies arrive in order: a write not answered when its WAIT is was sent again behind it
        CompletableFuture<Boolean> covered = acks.handle((n, failure) -> reply.isDone());
        return reply.thenCompose(value -> covered.thenCompose(inOrder -> (inOrder ? acks : await(target))
            .handle((n, failure) -> written(value, target, n, failure))));
    }

    /** @return the {@code WAIT} of this turn of {@code target}'s loop, sent by a task at its end (started by the first write) */
    private CompletableFuture<Long> turnWait(RedisClusterAsyncCommands<byte[], byte[]> target, Executor turnEnd) {
        CompletableFuture<Long> fresh = new CompletableFuture<>();
        CompletableFuture<Long> open = turnWaits.putIfAbsent(target, fresh);
        if (open != null) {
            return open;
        }
        turnEnd.execute(() -> {
            turnWaits.remove(target, fresh);
            await(target).whenComplete((n, failure) -> {
                if (failure != null) {
                    fresh.completeExceptionally(failure);
                } else {
                    fresh.complete(n);
                }
            });
        });
        return fresh;
    }

    /** @return how many replicas have every write so far of the connection {@code earlier} went out on, after one more {@code WAIT} */
    CompletableFuture<Object> again(Written earlier) {
        RedisClusterAsyncCommands<byte[], byte[]> target = earlier.target();
        return await(target).handle((n, failure) -> written(null, target, n, failure));
    }

    private Written written(Object value, RedisClusterAsyncCommands<byte[], byte[]> target, Long confirmed,
                            Throwable failure) {
        if (failure == null && confirmed < replicas) {
            shortOf.put(target, new Shortage(System.nanoTime() + TimeUnit.MILLISECONDS.toNanos(SHORT_PROBE_MILLIS), confirmed));
        } else if (failure == null) {
            shortOf.remove(target);
        }
        return new Written(value, target, failure == null ? confirmed : -1, failure == null ? null : cause(failure), true);
    }

    private CompletableFuture<Long> await(RedisClusterAsyncCommands<byte[], byte[]> target) {
        return target.waitForReplication(replicas, timeoutMillis).toCompletableFuture();
    }

    /** @return the commands of the connection that {@code key}'s writes go out on: the given ones, or a cluster's master node's */
    private static CompletableFuture<RedisClusterAsyncCommands<byte[], byte[]>> primary(
        RedisClusterAsyncCommands<byte[], byte[]> commands, byte[] key) {
        if (!(commands instanceof RedisAdvancedClusterAsyncCommands<byte[], byte[]> cluster)) {
            return CompletableFuture.completedFuture(commands);
        }
        StatefulRedisClusterConnection<byte[], byte[]> connection = cluster.getStatefulConnection();
        int slot = SlotHash.getSlot(key);
        RedisClusterNode master = connection.getPartitions().getMasterBySlot(slot);
        if (master == null) {
            return CompletableFuture.failedFuture(new IOException("no master of slot " + slot + " (key "
                + new String(key, StandardCharsets.UTF_8) + ") is known yet"));
        }
        return connection.getConnectionAsync(master.getUri().getHost(), master.getUri().getPort())
            .thenApply(StatefulRedisConnection::async);
    }

    private static Throwable cause(Throwable failure) {
        return failure instanceof CompletionException && failure.getCause() != null ? failure.getCause() : failure;
    }
}
