package dev.idempotency.testsupport;

import java.net.URI;

/**
 * The Redis the tests share (see ARCHITECTURE "Real services in tests"): the server at
 * {@code IDEMPOTENCY_TEST_REDIS_URI} (default {@code redis://127.0.0.1:6379}) when it answers
 * PING, otherwise a {@link RedisServerProcess} started for this JVM and stopped at its exit. Tests
 * isolate themselves by key prefix and delete their keys; they never flush or stop this server.
 */
public final class TestRedis {

    public static final String ENV = "IDEMPOTENCY_TEST_REDIS_URI";
    public static final String DEFAULT_URI = "redis://127.0.0.1:6379";

    private static String shared;

    private TestRedis() {
    }

    /** @return the URI of the shared test Redis, starting an embedded one when none answers */
    public static synchronized String uri() {
        if (shared == null) {
            String configured = System.getenv(ENV);
            shared = resolve(configured == null || configured.isBlank() ? DEFAULT_URI : configured).uri();
        }
        return shared;
    }

    /** Where the tests' Redis is, and the process started for it, if any. */
    public record Resolved(String uri, RedisServerProcess started) {
    }

    /**
     * @param configured a {@code redis://host:port} URI
     * @return it when a server answers there; else a freshly started server (stopped when the
     *     JVM exits)
     */
    public static Resolved resolve(String configured) {
        URI u = URI.create(configured);
        int port = u.getPort() == -1 ? 6379 : u.getPort();
        if (RedisServerProcess.ping(u.getHost(), port, 1000)) {
            return new Resolved(configured, null);
        }
        RedisServerProcess started = RedisServerProcess.start();
        Runtime.getRuntime().addShutdownHook(new Thread(started::close, "test-redis-stop"));
        return new Resolved(started.uri(), started);
    }
}
