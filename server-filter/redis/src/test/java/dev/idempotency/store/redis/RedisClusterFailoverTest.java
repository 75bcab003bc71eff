package dev.idempotency.store.redis;

import dev.idempotency.server.store.IdempotencyStore;
import dev.idempotency.testsupport.Http;
import dev.idempotency.testsupport.LocalRedisCluster;
import dev.idempotency.testsupport.RedisServerProcess;
import dev.idempotency.testsupport.RedisWire;
import io.lettuce.core.cluster.SlotHash;
import io.micronaut.context.ApplicationContext;
import io.micronaut.runtime.server.EmbeddedServer;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.DisplayName;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestInstance;

import java.io.IOException;
import java.net.URI;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.stream.Collectors;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * S24 on a Redis Cluster with replicas: three masters with a replica each, real processes of
 * this test, a node counted as failed after one second. A master is killed ({@code kill -9})
 * under load with {@code wait-replicas=1}; its replica is promoted, and the store follows.
 */
@TestInstance(TestInstance.Lifecycle.PER_CLASS)
class RedisClusterFailoverTest {

    LocalRedisCluster cluster;

    @BeforeAll
    void start() {
        cluster = new LocalRedisCluster(3, 1, 1000);
    }

    @AfterAll
    void stop() {
        if (cluster != null) {
            cluster.close();
        }
    }

    private ApplicationContext app() {
        Map<String, Object> settings = new HashMap<>(Map.of(
            "spec.name", TestApi.SPEC,
            "micronaut.server.port", -1,
            "redis.uris", cluster.uris().stream().map(u -> "redis://127.0.0.1:" + u.getPort())
                .collect(Collectors.joining(",")),
            "idempotency.store.redis.command-timeout", "500ms",
            "idempotency.store.redis.wait-replicas", 1,
            "idempotency.store.redis.wait-timeout", "200ms",
            "idempotency.store-unavailable-retry-after", "1s"));
        return ApplicationContext.run(settings);
    }

    /** @return how often a node was sent {@code READONLY} (reads from a replica) since it started */
    private static long readonlyCommands(RedisServerProcess node) {
        try {
            return RedisWire.info(URI.create(node.uri()), "commandstats", 2000).lines()
                .filter(l -> l.startsWith("cmdstat_readonly:"))
                .mapToLong(l -> Long.parseLong(l.replaceAll(".*calls=(\\d+).*", "$1"))).sum();
        } catch (IOException e) {
            return 0; // a node that is down received nothing
        }
    }

    @Test
    @DisplayName("S24: a master killed (kill -9) under load with wait-replicas=1: its replica is promoted, the store"
        + " follows it, no key runs twice, every key completed before the kill replays, no READONLY anywhere")
    void masterFailsOver() throws Exception {
        try (ApplicationContext app = app()) {
            RedisIdempotencyStore store = (RedisIdempotencyStore) app.getBean(IdempotencyStore.class);
            Http http = new Http(app.getBean(EmbeddedServer.class).start().getURI());
            String test = "cluster-failover-" + UUID.randomUUID();
            List<String> before = new ArrayList<>();
            for (int i = 0; i < 30; i++) {
                String k = "\"" + UUID.randomUUID() + "\"";
                FailoverLoad.answer(http, "/redis-api/" + test, k, new AtomicInteger());
                before.add(k);
            }
            int answered;
            try (FailoverLoad load = new FailoverLoad(http, "/redis-api/" + test, 4)) {
                RedisServerProcess.sleep(500);
                // the master of slot 0 (a third of the keys): the others keep serving throughout
                cluster.failOverMasterOf(0);
                load.awaitServed(100);
                load.close();
                answered = load.answered();
            }
            for (String k : before) {
                HttpResponse<byte[]> replay = FailoverLoad.answer(http, "/redis-api/" + test, k, new AtomicInteger());
                assertThat(replay.headers().firstValue("Idempotent-Replayed")).hasValue("true");
            }
            assertThat(TestApi.executions(test)).isEqualTo(30 + answered);
            assertThat(store.underReplicatedWrites()).isZero();
            for (RedisServerProcess node : cluster.nodes()) {
                assertThat(readonlyCommands(node)).as("READONLY sent to %d", node.port()).isZero();
            }
            // a key of the failed-over slot's range is written to its new master
            assertThat(SlotHash.getSlot(store.recordKeyText("x").getBytes(StandardCharsets.UTF_8))).isNotNegative();
        }
    }
}
