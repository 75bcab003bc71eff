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
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;
import java.util.function.Function;

/**
 * A write followed by Redis {@code WAIT} ({@code idempotency.store.redis.wait-replicas}): how many
 * replicas have it. {@code WAIT} counts the replicas that have every write of the connection it
 * is sent on, so it goes on the connection of the write, pipelined right behind it: one round trip
 * to the primary plus the primary's round trip to its replicas. On a Redis Cluster both go to the
 * master of the key's slot, on the node connection that Lettuce's routing uses for that master.
 *
 * <p>A script sent as {@code EVALSHA} that the server does not know yet is sent again as
 * {@code EVAL} once the refusal comes back, which is after the {@code WAIT} pipelined behind
 * it: replies come back in order, so when the {@code WAIT}'s reply finds the write not answered
 * yet, the write came later, and it is waited for again.
 */
final class ReplicaWait {

    /** A write's reply, and how many replicas confirmed it ({@code -1}: the {@code WAIT} itself failed). */
    record Written(Object reply, long replicas, Throwable waitFailure) {
    }

    private final int replicas;
    private final long timeoutMillis;

    /**
     * @param replicas how many replicas must confirm a write; more than zero
     * @param timeout  how long one {@code WAIT} waits
     */
    ReplicaWait(int replicas, Duration timeout) {
        if (replicas <= 0) {
            throw new IllegalArgumentException("a wait for replicas needs at least one, was " + replicas);
        }
        this.replicas = replicas;
        this.timeoutMillis = timeout.toMillis();
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
     * @return the write's reply with the replicas' count; fails only when the write failed
     */
    CompletableFuture<Object> send(RedisClusterAsyncCommands<byte[], byte[]> commands, byte[] key,
                                   Function<RedisClusterAsyncCommands<byte[], byte[]>, CompletableFuture<Object>> write) {
        return primary(commands, key).thenCompose(target -> {
            CompletableFuture<Object> reply = write.apply(target);
            CompletableFuture<Long> acks = await(target);
            // replies arrive in order: a write not answered when its WAIT is was sent again behind it
            CompletableFuture<Boolean> covered = acks.handle((n, failure) -> reply.isDone());
            return reply.thenCompose(value -> covered.thenCompose(inOrder -> (inOrder ? acks : await(target))
                .handle((n, failure) -> new Written(value, failure == null ? n : -1, failure == null ? null : cause(failure)))));
        });
    }

    /** @return how many replicas have every write of {@code key}'s primary connection so far, after one more {@code WAIT} */
    CompletableFuture<Object> again(RedisClusterAsyncCommands<byte[], byte[]> commands, byte[] key) {
        return primary(commands, key).thenCompose(this::await)
            .handle((n, failure) -> new Written(null, failure == null ? n : -1, failure == null ? null : cause(failure)));
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
