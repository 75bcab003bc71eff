package dev.idempotency.store.redis;

import dev.idempotency.server.store.AcquireResult;
import dev.idempotency.server.store.IdempotencyStoreException;
import dev.idempotency.server.store.StoredResponse;
import dev.idempotency.testsupport.MutableClock;
import dev.idempotency.testsupport.RedisServerProcess;
import io.lettuce.core.RedisClient;
import io.lettuce.core.RedisURI;
import io.lettuce.core.api.StatefulRedisConnection;
import io.netty.channel.EventLoop;
import io.netty.channel.MultiThreadIoEventLoopGroup;
import io.netty.channel.nio.NioIoHandler;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.DisplayName;
import org.junit.jupiter.api.Test;

import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.UUID;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.TimeUnit;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/**
 * What the store sends, counted by the Redis server itself ({@code INFO commandstats}, after
 * {@code CONFIG RESETSTAT}) on a server of this test's own (SCRIPT FLUSH must not disturb the
 * shared one): one command per operation (acquire a plain {@code SET NX GET}, the others one
 * EVALSHA once the script is cached, EVAL once after NOSCRIPT), and what each runs inside Redis;
 * how failures surface; and that the asynchronous calls never block their caller.
 */
class RedisRoundTripTest {

    private static final Pattern STAT = Pattern.compile("cmdstat_(\\w+):calls=(\\d+)");

    static RedisServerProcess server;
    static RedisClient client;
    static StatefulRedisConnection<String, String> admin;

    final MutableClock clock = new MutableClock();

    @BeforeAll
    static void start() {
        server = RedisServerProcess.start();
        client = RedisClient.create(server.uri());
        admin = client.connect();
    }

    @AfterAll
    static void stop() {
        admin.close();
        client.shutdown();
        server.close();
    }

    @BeforeEach
    void flushScripts() {
        admin.sync().scriptFlush();
    }

    private static RedisIdempotencyStore store(MutableClock clock, RedisIdempotencyStoreConfigurationProperties cfg) {
        return new RedisIdempotencyStore(client, List.of(RedisURI.create(server.uri())), clock, cfg);
    }

    private static RedisIdempotencyStore store(MutableClock clock) {
        return store(clock, new RedisIdempotencyStoreConfigurationProperties());
    }

    private static byte[] fp(String s) {
        return s.getBytes(StandardCharsets.UTF_8);
    }

    private static <T> T join(CompletionStage<T> stage) {
        try {
            return stage.toCompletableFuture().get(10, TimeUnit.SECONDS);
        } catch (java.util.concurrent.ExecutionException e) {
            throw (RuntimeException) e.getCause();
        } catch (Exception e) {
            throw new IllegalStateException(e);
        }
    }

    /**
     * The commands the server executed while {@code action} ran, those a script ran included, e.g.
     * {@code {evalsha=1, get=1, set=1}}.
     */
    private static Map<String, Long> executedDuring(Runnable action) {
        admin.sync().configResetstat();
        action.run();
        Map<String, Long> counts = new TreeMap<>();
        Matcher m = STAT.matcher(admin.sync().info("commandstats"));
        while (m.find()) {
            if (!m.group(1).equals("config") && !m.group(1).equals("info")) {
                counts.put(m.group(1), Long.parseLong(m.group(2)));
            }
        }
        return counts;
    }

    @Test
    @DisplayName("S10/S17: one command per operation: acquire is one SET NX GET (a replay, a 409 and a 422 too, writing"
        + " nothing); complete, renew and release one EVALSHA each once the script is loaded")
    void oneCommandPerOperation() {
        try (RedisIdempotencyStore store = store(clock)) {
            // warm up: the first call of each script hits NOSCRIPT and falls back to EVAL
            String warm = UUID.randomUUID().toString();
            long t0 = ((AcquireResult.Acquired) join(store.acquire(warm, fp("a"), Duration.ofSeconds(30)))).fencingToken();
            join(store.renew(warm, t0, Duration.ofSeconds(30)));
            join(store.complete(warm, t0, new StoredResponse(200, Map.of(), new byte[0], false), Duration.ofHours(1)));
            String warmRelease = UUID.randomUUID().toString();
            join(store.release(warmRelease, ((AcquireResult.Acquired) join(store.acquire(warmRelease, fp("a"),
                Duration.ofSeconds(30)))).fencingToken()));

            String key = UUID.randomUUID().toString();
            long[] token = new long[1];
            assertThat(executedDuring(() -> token[0] = ((AcquireResult.Acquired) join(store.acquire(key, fp("a"),
                Duration.ofSeconds(30)))).fencingToken())).isEqualTo(Map.of("set", 1L));
            assertThat(executedDuring(() -> assertThat(join(store.acquire(key, fp("a"), Duration.ofSeconds(30))))
                .isInstanceOf(AcquireResult.InProgress.class))).isEqualTo(Map.of("set", 1L));
            assertThat(executedDuring(() -> assertThat(join(store.acquire(key, fp("b"), Duration.ofSeconds(30))))
                .isInstanceOf(AcquireResult.Mismatch.class))).isEqualTo(Map.of("set", 1L));
            assertThat(executedDuring(() -> join(store.renew(key, token[0], Duration.ofSeconds(30)))))
                .isEqualTo(Map.of("evalsha", 1L, "get", 1L, "setrange", 1L, "pexpire", 1L));
            assertThat(executedDuring(() -> join(store.complete(key, token[0],
                new StoredResponse(201, Map.of("Content-Type", List.of("text/plain")), fp("done"), false),
                Duration.ofHours(1))))).isEqualTo(Map.of("evalsha", 1L, "get", 1L, "set", 1L));
            assertThat(executedDuring(() -> assertThat(join(store.acquire(key, fp("a"), Duration.ofSeconds(30))))
                .isInstanceOf(AcquireResult.Replay.class))).isEqualTo(Map.of("set", 1L));
            String other = UUID.randomUUID().toString();
            long t2 = ((AcquireResult.Acquired) join(store.acquire(other, fp("a"), Duration.ofSeconds(30)))).fencingToken();
            assertThat(executedDuring(() -> join(store.release(other, t2))))
                .isEqualTo(Map.of("evalsha", 1L, "get", 1L, "set", 1L));
            // the key is free again: the next acquire takes the tombstone over with a second call, a script
            assertThat(executedDuring(() -> assertThat(join(store.acquire(other, fp("a"), Duration.ofSeconds(30))))
                .isInstanceOf(AcquireResult.Acquired.class))).containsEntry("evalsha", 1L);
        }
    }

    @Test
    @DisplayName("S17: NOSCRIPT fallback: after SCRIPT FLUSH the store re-sends the script with EVAL once, then EVALSHA again")
    void noScriptFallback() {
        try (RedisIdempotencyStore store = store(clock)) {
            String key = UUID.randomUUID().toString();
            long token = ((AcquireResult.Acquired) join(store.acquire(key, fp("a"), Duration.ofSeconds(30)))).fencingToken();
            Map<String, Long> first = executedDuring(() -> join(store.renew(key, token, Duration.ofSeconds(30))));
            // the failed EVALSHA is counted too (as a call that got NOSCRIPT)
            assertThat(first).containsEntry("eval", 1L).containsKey("evalsha");
            assertThat(admin.sync().scriptExists(RedisScripts.RENEW.sha1())).containsExactly(true);

            admin.sync().scriptFlush();
            assertThat(admin.sync().scriptExists(RedisScripts.RENEW.sha1())).containsExactly(false);
            Map<String, Long> afterFlush = executedDuring(() -> assertThat(join(store.renew(key, token,
                Duration.ofSeconds(30)))).isTrue());
            assertThat(afterFlush).containsEntry("eval", 1L);
            assertThat(executedDuring(() -> join(store.renew(key, token, Duration.ofSeconds(30)))))
                .containsEntry("evalsha", 1L).doesNotContainKey("eval");
        }
    }

    @Test
    @DisplayName("S17: calls return at once and many can be in flight on one connection (pipelined)")
    void callsDoNotBlockTheCaller() {
        try (RedisIdempotencyStore store = store(clock)) {
            join(store.acquire(UUID.randomUUID().toString(), fp("a"), Duration.ofSeconds(30))); // connected
            admin.sync().clientPause(1000);
            List<CompletableFuture<AcquireResult>> inFlight = new ArrayList<>();
            for (int i = 0; i < 200; i++) {
                inFlight.add(store.acquire(UUID.randomUUID().toString(), fp("a"), Duration.ofSeconds(30))
                    .toCompletableFuture());
            }
            // the server is paused: a call that waited for its answer would be done when it returned
            assertThat(inFlight).noneMatch(CompletableFuture::isDone);
            assertThat(inFlight.stream().map(RedisRoundTripTest::join))
                .allMatch(r -> r instanceof AcquireResult.Acquired);
        }
    }

    @Test
    @DisplayName("S19: constructing the store does no I/O; an unreachable Redis fails within the command timeout as IdempotencyStoreException")
    void unreachableRedisFailsFast() {
        int closedPort = RedisServerProcess.freePort(false);
        RedisIdempotencyStoreConfigurationProperties cfg = new RedisIdempotencyStoreConfigurationProperties();
        cfg.setCommandTimeout(Duration.ofMillis(500));
        try (RedisIdempotencyStore store = new RedisIdempotencyStore(client,
            List.of(RedisURI.create("redis://127.0.0.1:" + closedPort)), clock, cfg)) {
            long start = System.nanoTime();
            assertThatThrownBy(() -> join(store.acquire("k", fp("a"), Duration.ofSeconds(30))))
                .isInstanceOf(IdempotencyStoreException.class);
            assertThatThrownBy(() -> join(store.complete("k", 1, new StoredResponse(200, Map.of(), new byte[0], false),
                Duration.ofHours(1)))).isInstanceOf(IdempotencyStoreException.class);
            assertThatThrownBy(() -> join(store.release("k", 1))).isInstanceOf(IdempotencyStoreException.class);
            assertThatThrownBy(() -> join(store.renew("k", 1, Duration.ofSeconds(1))))
                .isInstanceOf(IdempotencyStoreException.class);
            assertThat(Duration.ofNanos(System.nanoTime() - start)).isLessThan(Duration.ofSeconds(10));
        }
    }

    @Test
    @DisplayName("S19: a Redis that answers too slowly (CLIENT PAUSE) times out as IdempotencyStoreException, "
        + "with no timer per command")
    void slowRedisTimesOut() {
        RedisIdempotencyStoreConfigurationProperties cfg = new RedisIdempotencyStoreConfigurationProperties();
        cfg.setCommandTimeout(Duration.ofMillis(300));
        try (RedisIdempotencyStore store = store(clock, cfg)) {
            join(store.acquire(UUID.randomUUID().toString(), fp("a"), Duration.ofSeconds(30))); // connected, cached
            admin.sync().clientPause(1500);
            long start = System.nanoTime();
            assertThatThrownBy(() -> join(store.acquire(UUID.randomUUID().toString(), fp("a"), Duration.ofSeconds(30))))
                .isInstanceOf(IdempotencyStoreException.class)
                .hasMessageContaining("command timeout");
            assertThat(Duration.ofNanos(System.nanoTime() - start)).isLessThan(Duration.ofMillis(1500));
            RedisServerProcess.sleep(1500);
            // the late reply of the timed-out call is ignored; the connection serves the next call
            assertThat(join(store.acquire(UUID.randomUUID().toString(), fp("a"), Duration.ofSeconds(30))))
                .isInstanceOf(AcquireResult.Acquired.class);
        }
    }

    @Test
    @DisplayName("S19: a call made on an event loop, on that loop's own connection, times out like any other when"
        + " Redis answers too slowly, and the connection serves the next call")
    void slowRedisTimesOutOnAnEventLoopsConnection() throws Exception {
        RedisIdempotencyStoreConfigurationProperties cfg = new RedisIdempotencyStoreConfigurationProperties();
        cfg.setCommandTimeout(Duration.ofMillis(300));
        MultiThreadIoEventLoopGroup group = new MultiThreadIoEventLoopGroup(1, NioIoHandler.newFactory());
        try (RedisIdempotencyStore store = store(clock, cfg)) {
            EventLoop loop = group.next();
            assertThat(join(onLoop(loop, () -> store.acquire(UUID.randomUUID().toString(), fp("a"),
                Duration.ofSeconds(30))))).isInstanceOf(AcquireResult.Acquired.class);
            assertThat(store.connections()).as("the loop's own connection, no shared one").hasSize(1);
            admin.sync().clientPause(1500);
            long start = System.nanoTime();
            CompletableFuture<AcquireResult> late = onLoop(loop, () -> store.acquire(UUID.randomUUID().toString(),
                fp("a"), Duration.ofSeconds(30)));
            assertThatThrownBy(() -> join(late))
                .isInstanceOf(IdempotencyStoreException.class)
                .hasMessageContaining("command timeout");
            assertThat(Duration.ofNanos(System.nanoTime() - start)).isLessThan(Duration.ofMillis(1500));
            RedisServerProcess.sleep(1500);
            assertThat(join(onLoop(loop, () -> store.acquire(UUID.randomUUID().toString(), fp("a"),
                Duration.ofSeconds(30))))).isInstanceOf(AcquireResult.Acquired.class);
            assertThat(store.connections()).hasSize(1);
        } finally {
            group.shutdownGracefully(0, 1, TimeUnit.SECONDS).syncUninterruptibly();
        }
    }

    /** @return the stage of {@code call}, made on {@code loop} as the filter makes it */
    private static <T> CompletableFuture<T> onLoop(EventLoop loop, java.util.function.Supplier<CompletionStage<T>> call)
            throws Exception {
        return loop.submit(() -> call.get().toCompletableFuture()).get(5, TimeUnit.SECONDS);
    }

    @Test
    @DisplayName("S17: a corrupt record is reported as a store failure, never guessed")
    void corruptRecord() {
        try (RedisIdempotencyStore store = store(clock)) {
            String key = UUID.randomUUID().toString();
            admin.sync().hset(store.recordKeyText(key), Map.of("state", "C", "fp", "a",
                "deadline", Long.toString(clock.millis() + 60_000), "status", "200", "omitted", "0",
                "headers", "garbage", "body", ""));
            assertThatThrownBy(() -> join(store.acquire(key, fp("a"), Duration.ofSeconds(30))))
                .isInstanceOf(IdempotencyStoreException.class);
        }
    }
}
