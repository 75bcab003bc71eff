package dev.idempotency.store.redis;

import ch.qos.logback.classic.Level;
import dev.idempotency.server.http.IdempotencyFilter;
import dev.idempotency.server.store.IdempotencyStore;
import dev.idempotency.testsupport.Http;
import dev.idempotency.testsupport.LocalRedisSentinels;
import dev.idempotency.testsupport.LogCapture;
import dev.idempotency.testsupport.RedisServerProcess;
import dev.idempotency.testsupport.RedisWire;
import io.lettuce.core.api.StatefulConnection;
import io.lettuce.core.api.StatefulRedisConnection;
import io.micronaut.context.ApplicationContext;
import io.micronaut.runtime.server.EmbeddedServer;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.DisplayName;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestInstance;

import java.io.IOException;
import java.io.OutputStream;
import java.net.Socket;
import java.net.URI;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * S24 on Redis Sentinel: a primary, two replicas and three sentinels, all real processes of this
 * test on loopback ({@link LocalRedisSentinels}). The application names only the sentinels
 * ({@code redis-sentinel://...#idempotency}); the store asks them for the primary on every
 * connect, so a failover moves it to the new primary by itself.
 */
@TestInstance(TestInstance.Lifecycle.PER_CLASS)
class RedisSentinelTest {

    LocalRedisSentinels redis;

    @BeforeAll
    void start() {
        redis = new LocalRedisSentinels(2);
    }

    @AfterAll
    void stop() {
        if (redis != null) {
            redis.close();
        }
    }

    private ApplicationContext app(Map<String, Object> more) {
        Map<String, Object> settings = new HashMap<>(Map.of(
            "spec.name", TestApi.SPEC,
            "micronaut.server.port", -1,
            "redis.uri", redis.uri(),
            "idempotency.store.redis.command-timeout", "500ms",
            "idempotency.store-unavailable-retry-after", "1s"));
        settings.putAll(more);
        return ApplicationContext.run(settings);
    }

    private static String key() {
        return "\"" + UUID.randomUUID() + "\"";
    }

    /** @return the port of the server each of the store's connections is connected to ({@code INFO server}) */
    private static List<Integer> connectedPorts(RedisIdempotencyStore store) {
        List<Integer> ports = new ArrayList<>();
        for (StatefulConnection<byte[], byte[]> c : store.connections()) {
            String info = ((StatefulRedisConnection<byte[], byte[]>) c).sync().info("server");
            ports.add(info.lines().filter(l -> l.startsWith("tcp_port:"))
                .map(l -> Integer.parseInt(l.substring("tcp_port:".length()).trim())).findFirst().orElseThrow());
        }
        return ports;
    }

    /**
     * @return the clients connected to a server now that are neither a sentinel, a replica nor
     *     the connection asking: the application's, whose commands it would execute
     */
    private static List<String> applicationClients(int port) throws IOException {
        try (Socket s = RedisWire.open(URI.create("redis://127.0.0.1:" + port), 2000)) {
            s.setSoTimeout(2000);
            OutputStream out = s.getOutputStream();
            out.write(RedisWire.command("CLIENT", "LIST"));
            out.flush();
            String header = RedisWire.line(s.getInputStream());
            byte[] body = s.getInputStream().readNBytes(Integer.parseInt(header.substring(1)) + 2);
            return new String(body, StandardCharsets.UTF_8).lines()
                .filter(l -> l.contains(" flags=N ") && !l.contains(" name=sentinel-") && !l.contains(" cmd=client|list"))
                .toList();
        }
    }

    @Test
    @DisplayName("S24: through redis-sentinel:// the store finds the primary; every connection it opens is to the"
        + " primary, none to a replica")
    void connectsToThePrimary() throws IOException {
        try (ApplicationContext app = app(Map.of())) {
            RedisIdempotencyStore store = (RedisIdempotencyStore) app.getBean(IdempotencyStore.class);
            assertThat(store.describe()).contains("the primary 'idempotency' of sentinels 127.0.0.1:");
            Http http = new Http(app.getBean(EmbeddedServer.class).start().getURI());
            String test = "sentinel-" + UUID.randomUUID();
            for (int i = 0; i < 20; i++) {
                assertThat(http.postJson("/redis-api/" + test, key(), "{}").statusCode()).isEqualTo(200);
            }
            int primary = redis.primaryPort();
            assertThat(connectedPorts(store)).isNotEmpty().containsOnly(primary);
            for (RedisServerProcess server : redis.servers()) {
                if (server.port() != primary) {
                    assertThat(applicationClients(server.port())).as("clients of replica %d", server.port()).isEmpty();
                }
            }
        }
    }

    @Test
    @DisplayName("S24: the primary killed (kill -9) under load and failed over, with wait-replicas=1: the store's"
        + " connections follow the sentinels to the new primary, never to a replica; no key runs twice, and every"
        + " key completed before the kill replays")
    void followsAFailover() throws Exception {
        try (ApplicationContext app = app(Map.of("idempotency.store.redis.wait-replicas", 1,
            "idempotency.store.redis.wait-timeout", "200ms"))) {
            RedisIdempotencyStore store = (RedisIdempotencyStore) app.getBean(IdempotencyStore.class);
            Http http = new Http(app.getBean(EmbeddedServer.class).start().getURI());
            String test = "failover-" + UUID.randomUUID();
            List<String> before = new ArrayList<>();
            for (int i = 0; i < 10; i++) {
                String k = key();
                FailoverLoad.answer(http, "/redis-api/" + test, k, new AtomicInteger());
                before.add(k);
            }
            int oldPrimary = redis.primaryPort();
            int answered;
            try (FailoverLoad load = new FailoverLoad(http, "/redis-api/" + test, 4)) {
                RedisServerProcess.sleep(500);
                redis.failOver();
                load.awaitServed(50);
                load.close();
                answered = load.answered();
            }

            int newPrimary = redis.primaryPort();
            assertThat(newPrimary).isNotEqualTo(oldPrimary);
            assertThat(connectedPorts(store)).isNotEmpty().containsOnly(newPrimary);
            for (RedisServerProcess server : redis.servers()) {
                if (server.port() != newPrimary) {
                    assertThat(applicationClients(server.port())).as("clients of replica %d", server.port()).isEmpty();
                }
            }
            // every key completed before the kill was confirmed by a replica: it replays from the new primary
            for (String k : before) {
                HttpResponse<byte[]> replay = FailoverLoad.answer(http, "/redis-api/" + test, k, new AtomicInteger());
                assertThat(replay.headers().firstValue("Idempotent-Replayed")).hasValue("true");
            }
            // one execution per key: the ten before, and each key the callers got answered
            assertThat(TestApi.executions(test)).isEqualTo(10 + answered);
        }
    }

    @Test
    @DisplayName("S24: the primary killed while an acquire waits for its replicas: the 503's record reached the new"
        + " primary, and its release, retried in the background, frees the key within seconds of the promotion, not"
        + " a lease later; the handler runs once")
    void unconfirmedAcquireCutOffByAFailoverIsReleased() throws Exception {
        try (ApplicationContext app = app(Map.of("idempotency.store.redis.wait-replicas", 1,
                "idempotency.store.redis.command-timeout", "3s", "idempotency.store.redis.wait-timeout", "2s"));
             LogCapture log = LogCapture.of(IdempotencyFilter.LOG_CATEGORY, Level.INFO).start()) {
            Http http = new Http(app.getBean(EmbeddedServer.class).start().getURI());
            String test = "cut-off-" + UUID.randomUUID();
            FailoverLoad.answer(http, "/redis-api/" + test, key(), new AtomicInteger()); // connections up
            String key = key();
            List<RedisServerProcess> replicas = redis.servers().stream().filter(r -> r.port() != redis.primaryPort())
                .toList();
            // the replicas stop reading: the acquire's record waits in their sockets, its WAIT unanswered
            replicas.forEach(RedisServerProcess::pause);
            CompletableFuture<HttpResponse<byte[]>> first;
            CompletableFuture<Long> promoted;
            try {
                first = CompletableFuture.supplyAsync(() -> http.postJson("/redis-api/" + test, key, "{}"));
                RedisServerProcess.sleep(400);
                promoted = CompletableFuture.supplyAsync(redis::failOver); // kill -9, then the promotion
                RedisServerProcess.sleep(200);
            } finally {
                replicas.forEach(RedisServerProcess::resume); // they read the record, then see the primary gone
            }
            assertThat(first.get(30, TimeUnit.SECONDS).statusCode()).isEqualTo(503);
            promoted.get(60, TimeUnit.SECONDS);
            long afterPromotion = System.nanoTime();

            HttpResponse<byte[]> answered = FailoverLoad.answer(http, "/redis-api/" + test, key, new AtomicInteger());
            long seconds = TimeUnit.NANOSECONDS.toSeconds(System.nanoTime() - afterPromotion);
            assertThat(answered.statusCode()).isEqualTo(200);
            assertThat(seconds).as("seconds from the promotion until the key ran (the lease is 30 s)").isLessThan(10);
            assertThat(TestApi.executions(test)).as("the warm-up and the cut-off key, each once").isEqualTo(2);
            assertThat(log.lines()).anyMatch(m -> m.contains("release pending"));
        }
    }

    @Test
    @DisplayName("S24: a master name that no sentinel monitors is a startup WARN that says what to change")
    void unknownMasterName() {
        try (LogCapture log = LogCapture.of(RedisIdempotencyStore.class, Level.WARN).start();
             ApplicationContext app = app(Map.of("redis.uri", redis.uri("payments")))) {
            assertThat(app.getBean(IdempotencyStore.class)).isInstanceOf(RedisIdempotencyStore.class);
            assertThat(log.lines(Level.WARN)).anySatisfy(line -> assertThat(line)
                .contains("no sentinel knows a primary named 'payments'")
                .contains("every request with an Idempotency-Key is answered 503")
                .contains("'sentinel monitor' line"));
        }
    }

    @Test
    @DisplayName("S24: wait-replicas above the replicas the primary reports is a startup WARN naming both numbers")
    void moreReplicasThanThereAre() {
        try (LogCapture log = LogCapture.of(RedisIdempotencyStore.class, Level.WARN).start();
             ApplicationContext app = app(Map.of("idempotency.store.redis.wait-replicas", 3))) {
            assertThat(app.getBean(IdempotencyStore.class)).isInstanceOf(RedisIdempotencyStore.class);
            assertThat(log.lines(Level.WARN)).anySatisfy(line -> assertThat(line)
                .contains("wait-replicas=3, but the primary reports 2 connected replica(s)")
                .contains("lower wait-replicas to at most 2"));
        }
    }
}
