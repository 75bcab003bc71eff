package dev.idempotency.store.redis;

import dev.idempotency.testsupport.RedisServerProcess;

import dev.idempotency.server.store.AcquireResult;
import dev.idempotency.server.store.IdempotencyStoreException;
import dev.idempotency.server.store.StoredResponse;
import dev.idempotency.testsupport.MutableClock;
import io.lettuce.core.RedisClient;
import io.lettuce.core.api.StatefulRedisConnection;
import io.lettuce.core.event.command.CommandListener;
import io.lettuce.core.event.command.CommandStartedEvent;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.DisplayName;
import org.junit.jupiter.api.Test;

import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import java.util.concurrent.CopyOnWriteArrayList;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/**
 * What the store sends, counted with a Lettuce {@link CommandListener} on a Redis server of
 * this test's own (SCRIPT FLUSH must not disturb the shared one): one EVALSHA per operation once
 * the script is cached, EVAL once after NOSCRIPT; and how failures surface.
 */
class RedisRoundTripTest {

    static RedisServerProcess server;
    static RedisClient client;
    static final List<String> sent = new CopyOnWriteArrayList<>();

    final MutableClock clock = new MutableClock();

    @BeforeAll
    static void start() {
        server = RedisServerProcess.start();
        client = RedisClient.create(server.uri());
        client.addListener(new CommandListener() {
            @Override
            public void commandStarted(CommandStartedEvent event) {
                sent.add(event.getCommand().getType().toString());
            }
        });
    }

    @AfterAll
    static void stop() {
        client.shutdown();
        server.close();
    }

    @BeforeEach
    void flushScripts() {
        try (StatefulRedisConnection<String, String> c = client.connect()) {
            c.sync().scriptFlush();
        }
        sent.clear();
    }

    private static RedisIdempotencyStore store(RedisClient client, MutableClock clock) {
        return new RedisIdempotencyStore(client, clock, new RedisIdempotencyStoreConfigurationProperties());
    }

    private static byte[] fp(String s) {
        return s.getBytes(StandardCharsets.UTF_8);
    }

    private List<String> sentSince(Runnable action) {
        sent.clear();
        action.run();
        return List.copyOf(sent);
    }

    @Test
    @DisplayName("S10/S17: one round trip per acquire and per complete: exactly one EVALSHA each once the script is loaded")
    void oneCommandPerOperation() {
        try (RedisIdempotencyStore store = store(client, clock)) {
            // warm up: the first call of each script hits NOSCRIPT and falls back to EVAL
            String warm = UUID.randomUUID().toString();
            long t0 = ((AcquireResult.Acquired) store.acquire(warm, fp("a"), Duration.ofSeconds(30))).fencingToken();
            store.renew(warm, t0, Duration.ofSeconds(30));
            store.complete(warm, t0, new StoredResponse(200, Map.of(), new byte[0], false), Duration.ofHours(1));
            String warmRelease = UUID.randomUUID().toString();
            store.release(warmRelease, ((AcquireResult.Acquired) store.acquire(warmRelease, fp("a"),
                Duration.ofSeconds(30))).fencingToken());

            String key = UUID.randomUUID().toString();
            long[] token = new long[1];
            assertThat(sentSince(() -> token[0] = ((AcquireResult.Acquired) store.acquire(key, fp("a"),
                Duration.ofSeconds(30))).fencingToken())).containsExactly("EVALSHA");
            assertThat(sentSince(() -> store.acquire(key, fp("a"), Duration.ofSeconds(30)))).containsExactly("EVALSHA");
            assertThat(sentSince(() -> store.renew(key, token[0], Duration.ofSeconds(30)))).containsExactly("EVALSHA");
            assertThat(sentSince(() -> store.complete(key, token[0],
                new StoredResponse(201, Map.of("Content-Type", List.of("text/plain")), fp("done"), false),
                Duration.ofHours(1)))).containsExactly("EVALSHA");
            assertThat(sentSince(() -> assertThat(store.acquire(key, fp("a"), Duration.ofSeconds(30)))
                .isInstanceOf(AcquireResult.Replay.class))).containsExactly("EVALSHA");
            String other = UUID.randomUUID().toString();
            long t2 = ((AcquireResult.Acquired) store.acquire(other, fp("a"), Duration.ofSeconds(30))).fencingToken();
            assertThat(sentSince(() -> store.release(other, t2))).containsExactly("EVALSHA");
        }
    }

    @Test
    @DisplayName("S17: NOSCRIPT fallback: after SCRIPT FLUSH the store re-sends the script with EVAL once, then EVALSHA again")
    void noScriptFallback() {
        try (RedisIdempotencyStore store = store(client, clock);
             StatefulRedisConnection<String, String> admin = client.connect()) {
            store.release(UUID.randomUUID().toString(), 1); // connects (HELLO etc.) outside the counted calls
            String key = UUID.randomUUID().toString();
            List<String> first = sentSince(() -> store.acquire(key, fp("a"), Duration.ofSeconds(30)));
            assertThat(first).containsExactly("EVALSHA", "EVAL");
            assertThat(admin.sync().scriptExists(RedisIdempotencyStore.ACQUIRE.sha1())).containsExactly(true);

            admin.sync().scriptFlush();
            assertThat(admin.sync().scriptExists(RedisIdempotencyStore.ACQUIRE.sha1())).containsExactly(false);
            sent.clear();
            List<String> afterFlush = sentSince(() -> assertThat(store.acquire(key, fp("a"), Duration.ofSeconds(30)))
                .isInstanceOf(AcquireResult.InProgress.class));
            assertThat(afterFlush).containsExactly("EVALSHA", "EVAL");
            assertThat(sentSince(() -> store.acquire(key, fp("a"), Duration.ofSeconds(30)))).containsExactly("EVALSHA");
        }
    }

    @Test
    @DisplayName("S19: constructing the store does no I/O; an unreachable Redis fails within the command timeout as IdempotencyStoreException")
    void unreachableRedisFailsFast() {
        int closedPort = RedisServerProcess.freePort(false);
        RedisClient nowhere = RedisClient.create("redis://127.0.0.1:" + closedPort);
        RedisIdempotencyStoreConfigurationProperties cfg = new RedisIdempotencyStoreConfigurationProperties();
        cfg.setCommandTimeout(Duration.ofMillis(500));
        try (RedisIdempotencyStore store = new RedisIdempotencyStore(nowhere, clock, cfg)) {
            long start = System.nanoTime();
            assertThatThrownBy(() -> store.acquire("k", fp("a"), Duration.ofSeconds(30)))
                .isInstanceOf(IdempotencyStoreException.class);
            assertThatThrownBy(() -> store.complete("k", 1, new StoredResponse(200, Map.of(), new byte[0], false),
                Duration.ofHours(1))).isInstanceOf(IdempotencyStoreException.class);
            assertThatThrownBy(() -> store.release("k", 1)).isInstanceOf(IdempotencyStoreException.class);
            assertThatThrownBy(() -> store.renew("k", 1, Duration.ofSeconds(1))).isInstanceOf(IdempotencyStoreException.class);
            assertThat(Duration.ofNanos(System.nanoTime() - start)).isLessThan(Duration.ofSeconds(10));
        } finally {
            nowhere.shutdown();
        }
    }

    @Test
    @DisplayName("S19: a Redis that answers too slowly (CLIENT PAUSE) times out as IdempotencyStoreException")
    void slowRedisTimesOut() {
        RedisIdempotencyStoreConfigurationProperties cfg = new RedisIdempotencyStoreConfigurationProperties();
        cfg.setCommandTimeout(Duration.ofMillis(300));
        try (RedisIdempotencyStore store = new RedisIdempotencyStore(client, clock, cfg)) {
            store.acquire(UUID.randomUUID().toString(), fp("a"), Duration.ofSeconds(30)); // connected, script cached
            try (StatefulRedisConnection<String, String> admin = client.connect()) {
                admin.sync().clientPause(1500);
            }
            long start = System.nanoTime();
            assertThatThrownBy(() -> store.acquire(UUID.randomUUID().toString(), fp("a"), Duration.ofSeconds(30)))
                .isInstanceOf(IdempotencyStoreException.class);
            assertThat(Duration.ofNanos(System.nanoTime() - start)).isLessThan(Duration.ofMillis(1500));
            RedisServerProcess.sleep(1500);
        }
    }

    @Test
    @DisplayName("S17: a corrupt record is reported as a store failure, never guessed")
    void corruptRecord() {
        try (RedisIdempotencyStore store = store(client, clock);
             StatefulRedisConnection<String, String> admin = client.connect()) {
            String key = UUID.randomUUID().toString();
            admin.sync().hset(store.recordKeyText(key), Map.of("state", "C", "fp", "a",
                "deadline", Long.toString(clock.millis() + 60_000), "status", "200", "omitted", "0",
                "headers", "garbage", "body", ""));
            assertThatThrownBy(() -> store.acquire(key, fp("a"), Duration.ofSeconds(30)))
                .isInstanceOf(IdempotencyStoreException.class);
        }
    }
}
