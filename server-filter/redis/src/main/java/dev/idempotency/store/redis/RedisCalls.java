package dev.idempotency.store.redis;

import dev.idempotency.server.store.IdempotencyStoreException;
import io.lettuce.core.cluster.api.async.RedisClusterAsyncCommands;

import java.io.IOException;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;

/**
 * One Redis call of the store: sent on a link's connection from the link's own thread, its reply
 * decoded, and every failure (no connection, an error reply, a reply that cannot be decoded)
 * turned into an {@link IdempotencyStoreException}.
 */
final class RedisCalls {

    private RedisCalls() {
    }

    /** One Redis call of the store, given the connection's commands. */
    @FunctionalInterface
    interface Command {
        CompletableFuture<Object> send(RedisClusterAsyncCommands<byte[], byte[]> commands);
    }

    /** A decoder of a reply; may throw {@link IOException} for a record it cannot read. */
    @FunctionalInterface
    interface Decoder<T> {
        T decode(Object reply) throws IOException;
    }

    /** What to do instead when a command fails: another stage, or {@code null} to fail the call. */
    @FunctionalInterface
    interface Recovery<T> {
        CompletableFuture<T> recover(Throwable failure);
    }

    static <T> CompletableFuture<T> run(RedisLink link, String name, Command command, Decoder<T> decoder) {
        return run(link, name, command, decoder, failure -> null);
    }

    /**
     * Sends {@code command} on {@code link}'s connection and decodes its reply; the stage
     * fails with an {@link IdempotencyStoreException} on any failure, and when no answer came
     * within the command timeout.
     */
    static <T> CompletableFuture<T> run(RedisLink link, String name, Command command, Decoder<T> decoder,
                                         Recovery<T> recovery) {
        CompletableFuture<T> result = new CompletableFuture<>();
        link.track(result);
        CompletableFuture<RedisClusterAsyncCommands<byte[], byte[]>> commands = link.commands();
        if (commands.isDone() && !commands.isCompletedExceptionally()) {
            RedisClusterAsyncCommands<byte[], byte[]> c = commands.join();
            link.dispatch(() -> send(name, c, command, decoder, recovery, result));
        } else {
            commands.whenComplete((c, failure) -> {
                if (failure != null) {
                    result.completeExceptionally(new IdempotencyStoreException(
                        "Redis idempotency store: cannot connect: " + cause(failure), cause(failure)));
                } else {
                    link.dispatch(() -> send(name, c, command, decoder, recovery, result));
                }
            });
        }
        return result;
    }

    private static <T> void send(String name, RedisClusterAsyncCommands<byte[], byte[]> commands, Command command,
                          Decoder<T> decoder, Recovery<T> recovery, CompletableFuture<T> result) {
        CompletableFuture<Object> reply;
        try {
            reply = command.send(commands);
        } catch (RuntimeException e) {
            reply = CompletableFuture.failedFuture(e);
        }
        reply.whenComplete((value, failure) -> {
            if (failure != null) {
                Throwable cause = cause(failure);
                CompletableFuture<T> instead = recovery.recover(cause);
                if (instead != null) {
                    instead.whenComplete((v, f) -> {
                        if (f != null) {
                            result.completeExceptionally(cause(f));
                        } else {
                            result.complete(v);
                        }
                    });
                    return;
                }
                result.completeExceptionally(new IdempotencyStoreException("Redis idempotency store: " + name
                    + " failed: " + cause, cause));
                return;
            }
            try {
                result.complete(decoder.decode(value));
            } catch (IOException | RuntimeException e) {
                result.completeExceptionally(new IdempotencyStoreException("Redis idempotency store: the reply of "
                    + name + " could not be decoded: " + e.getMessage(), e));
            }
        });
    }

    static Throwable cause(Throwable failure) {
        return failure instanceof CompletionException && failure.getCause() != null ? failure.getCause() : failure;
    }
}
