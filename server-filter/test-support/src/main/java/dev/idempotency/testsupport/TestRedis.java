package dev.idempotency.testsupport;

import io.lettuce.core.KeyScanCursor;
import io.lettuce.core.RedisClient;
import io.lettuce.core.ScanArgs;
import io.lettuce.core.ScanCursor;
import io.lettuce.core.api.StatefulRedisConnection;

import java.net.URI;
import java.util.UUID;

/**
 * The Redis the tests share (see ARCHITECTURE "Real services in tests"): the server at
 * {@code IDEMPOTENCY_TEST_REDIS_URI} (default {@code redis://127.0.0.1:6379}) when it answers
 * PING (authenticated with the URI's credentials, {@code redis://:password@host:port}, when it
 * has them), otherwise a {@link RedisServerProcess} started for this JVM and stopped at its exit. Tests
 * isolate themselves by key prefix and delete their keys; they never flush or stop this server.
 */
public final class TestRedis {

    public static final String ENV = "IDEMPOTENCY_TEST_REDIS_URI";
    public static final String DEFAULT_URI = "redis://127.0.0.1:6379";

    private static String shared;

    private TestRedis() {
    }

    /** @return a key prefix no other test run uses, for {@code test} to isolate its keys (and delete them) */
    public static String uniquePrefix(String test) {
        return "idempotency-test:" + test + ":" + UUID.randomUUID() + ":";
    }

    /** @return the URI of the shared test Redis, starting an embedded one when none answers */
    public static synchronized String uri() {
        if (shared == null) {
            String configured = System.getenv(ENV);
            shared = resolve(configured == null || configured.isBlank() ? DEFAULT_URI : configured).uri();
        }
        return shared;
    }

    /**
     * Deletes every key of the shared test Redis that starts with {@code prefix} (SCAN + UNLINK),
     * for a test to leave nothing behind.
     *
     * @return how many keys were deleted
     */
    public static int deleteKeys(String prefix) {
        RedisClient client = RedisClient.create(uri());
        try {
            return deleteKeys(client, prefix);
        } finally {
            client.shutdown();
        }
    }

    /** {@link #deleteKeys(String)} through a client the caller already has. */
    public static int deleteKeys(RedisClient client, String prefix) {
        int deleted = 0;
        try (StatefulRedisConnection<String, String> c = client.connect()) {
            ScanCursor cursor = ScanCursor.INITIAL;
            do {
                KeyScanCursor<String> page = c.sync().scan(cursor, ScanArgs.Builder.matches(prefix + "*").limit(500));
                if (!page.getKeys().isEmpty()) {
                    deleted += c.sync().unlink(page.getKeys().toArray(String[]::new)).intValue();
                }
                cursor = page;
            } while (!cursor.isFinished());
        }
        return deleted;
    }

    /** Where the tests' Redis is, and the process started for it, if any. */
    public record Resolved(String uri, RedisServerProcess started) {
    }

    /**
     * @param configured a {@code redis://host:port} URI, with credentials when the server needs them
     * @return it when a server answers there; else a freshly started server (stopped when the
     *     JVM exits)
     */
    public static Resolved resolve(String configured) {
        if (RedisWire.answersPing(URI.create(configured), 1000)) { // with the URI's password, if it has one
            return new Resolved(configured, null);
        }
        RedisServerProcess started = RedisServerProcess.start();
        Runtime.getRuntime().addShutdownHook(new Thread(started::close, "test-redis-stop"));
        return new Resolved(started.uri(), started);
    }
}
