package dev.idempotency.store.redis;

import io.lettuce.core.RedisNoScriptException;
import io.lettuce.core.ScriptOutputType;
import io.lettuce.core.api.async.RedisScriptingAsyncCommands;

import java.nio.charset.StandardCharsets;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.util.HexFormat;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;

/**
 * A Lua script run with {@code EVALSHA}, falling back to {@code EVAL} (which also caches it
 * on the server) when the server answers {@code NOSCRIPT}: after a restart, a
 * {@code SCRIPT FLUSH}, or on a cluster node that never saw it. Nothing is loaded up front, and
 * nothing waits: both calls go through Lettuce's asynchronous API.
 */
final class RedisScript {

    private final String name;
    private final byte[] source;
    private final String sha1;
    private final ScriptOutputType outputType;

    RedisScript(String name, String source, ScriptOutputType outputType) {
        this.name = name;
        this.source = source.getBytes(StandardCharsets.UTF_8);
        this.sha1 = sha1(this.source);
        this.outputType = outputType;
    }

    String name() {
        return name;
    }

    String sha1() {
        return sha1;
    }

    /** @return the script's reply; completes on Lettuce's I/O thread */
    <T> CompletableFuture<T> execute(RedisScriptingAsyncCommands<byte[], byte[]> commands, byte[][] keys,
                                     byte[]... args) {
        CompletableFuture<T> first = commands.<T>evalsha(sha1, outputType, keys, args).toCompletableFuture();
        return first.exceptionallyCompose(failure -> {
            Throwable cause = failure instanceof CompletionException && failure.getCause() != null
                ? failure.getCause() : failure;
            if (cause instanceof RedisNoScriptException) { // Lettuce maps every NOSCRIPT reply to this
                return commands.<T>eval(source, outputType, keys, args).toCompletableFuture();
            }
            return CompletableFuture.failedFuture(cause);
        });
    }

    private static String sha1(byte[] text) {
        try {
            return HexFormat.of().formatHex(MessageDigest.getInstance("SHA-1").digest(text));
        } catch (NoSuchAlgorithmException e) {
            throw new IllegalStateException(e);
        }
    }
}
