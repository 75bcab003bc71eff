package dev.idempotency.store.redis;

import io.lettuce.core.RedisNoScriptException;
import io.lettuce.core.ScriptOutputType;
import io.lettuce.core.api.sync.RedisScriptingCommands;

import java.nio.charset.StandardCharsets;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.util.HexFormat;

/**
 * A Lua script run with {@code EVALSHA}, falling back to {@code EVAL} (which also caches it
 * on the server) when the server answers {@code NOSCRIPT}: after a restart, a
 * {@code SCRIPT FLUSH}, or on a cluster node that never saw it. Nothing is loaded up front.
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

    <T> T execute(RedisScriptingCommands<byte[], byte[]> commands, byte[][] keys, byte[]... args) {
        try {
            return commands.evalsha(sha1, outputType, keys, args);
        } catch (RedisNoScriptException e) { // Lettuce maps every NOSCRIPT reply to this
            return commands.eval(source, outputType, keys, args);
        }
    }

    private static String sha1(byte[] text) {
        try {
            return HexFormat.of().formatHex(MessageDigest.getInstance("SHA-1").digest(text));
        } catch (NoSuchAlgorithmException e) {
            throw new IllegalStateException(e);
        }
    }
}
