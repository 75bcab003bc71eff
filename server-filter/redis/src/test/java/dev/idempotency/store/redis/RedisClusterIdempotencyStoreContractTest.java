package dev.idempotency.store.redis;

import ch.qos.logback.classic.Level;
import dev.idempotency.testsupport.Await;
import dev.idempotency.testsupport.LocalRedisCluster;
import dev.idempotency.testsupport.LogCapture;
import dev.idempotency.testsupport.RedisServerProcess;

import dev.idempotency.server.store.AcquireResult;
import dev.idempotency.server.store.IdempotencyStore;
import dev.idempotency.store.tck.IdempotencyStoreContractTest;
import dev.idempotency.testsupport.MutableClock;
import io.lettuce.core.RedisChannelHandler;
import io.lettuce.core.api.StatefulConnection;
import io.lettuce.core.cluster.RedisClusterClient;
import io.lettuce.core.cluster.SlotHash;
import io.lettuce.core.cluster.api.StatefulRedisClusterConnection;
import io.lettuce.core.cluster.models.partitions.RedisClusterNode;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.DisplayName;
import org.junit.jupiter.api.Test;
import io.micronaut.context.ApplicationContext;

import java.time.Duration;
import java.util.List;
import java.util.Map;

import java.util.HashSet;
import java.util.Set;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * The whole store contract suite (S17) against a real three-master Redis Cluster started on
 * loopback by the test ({@link LocalRedisCluster}), through a {@link RedisClusterClient}.
 */
class RedisClusterIdempotencyStoreContractTest extends IdempotencyStoreContractTest {

    static LocalRedisCluster cluster;
    static RedisClusterClient client;
    RedisIdempotencyStore redisStore;

    @BeforeAll
    static void startCluster() {
        cluster = new LocalRedisCluster(3);
        client = RedisClusterClient.create(cluster.uris());
    }

    @AfterAll
    static void stopCluster() {
        if (client != null) {
            client.shutdown();
        }
        if (cluster != null) {
            cluster.close();
        }
    }

    @Override
    protected IdempotencyStore store(MutableClock clock) {
        redisStore = new RedisIdempotencyStore(client, cluster.uris(), clock,
            RedisIdempotencyStoreContractTest.config(RedisIdempotencyStoreConfigurationProperties.DEFAULT_KEY_PREFIX));
        return redisStore;
    }

    @AfterEach
    void closeStore() {
        redisStore.close();
    }

    @Test
    @DisplayName("S17: cluster: a record is one key, on the master of its hash tag's slot, and records spread over"
        + " all three masters")
    void hashTagsKeepRecordsInOneSlot() {
        Set<String> owners = new HashSet<>();
        try (StatefulRedisClusterConnection<String, String> c = client.connect()) {
            for (int i = 0; i < 30; i++) {
                String key = newKey();
                assertThat(acquire(key, fingerprint("a"), LEASE)).isInstanceOf(AcquireResult.Acquired.class);
                String record = redisStore.recordKeyText(key);
                int slot = SlotHash.getSlot(record);
                assertThat(slot).isEqualTo(SlotHash.getSlot("{" + key + "}"));
                RedisClusterNode owner = c.getPartitions().getPartitionBySlot(slot);
                assertThat(c.getConnection(owner.getNodeId()).sync().exists(record)).isEqualTo(1L);
                owners.add(owner.getNodeId());
            }
        }
        assertThat(owners).hasSize(3);
    }

    @Test
    @DisplayName("S17: cluster: closing the store closes its cluster connection and the masters' connections under it,"
        + " each once: Lettuce warns of no second close")
    void closeClosesEveryConnectionOnce() throws InterruptedException {
        int before = clients();
        for (int i = 0; i < 30; i++) { // keys on all three masters, so each has a connection
            assertThat(acquire(newKey(), fingerprint("a"), LEASE)).isInstanceOf(AcquireResult.Acquired.class);
        }
        List<StatefulConnection<byte[], byte[]>> connections = redisStore.connections();
        assertThat(connections).hasSize(1);
        assertThat(clients()).as("a connection to each master at least").isGreaterThanOrEqualTo(before + 3);
        try (LogCapture lettuce = LogCapture.of(RedisChannelHandler.class, Level.WARN).start()) {
            redisStore.close();
            assertThat(connections).noneMatch(StatefulConnection::isOpen);
            Await.until("the masters to see every connection of the store closed", Duration.ofSeconds(10),
                () -> clients() <= before);
            assertThat(lettuce.lines(Level.WARN)).isEmpty();
        }
    }

    /** @return how many clients the cluster's servers have connected */
    private int clients() {
        return cluster.nodes().stream().mapToInt(RedisServerProcess::connectedClients).sum();
    }

    @Test
    @DisplayName("S17: with redis.uris micronaut-redis makes a cluster client, and the store bean runs on the cluster")
    void micronautClusterWiring() {
        List<String> uris = cluster.nodes().stream().map(RedisServerProcess::uri).toList();
        try (ApplicationContext ctx = ApplicationContext.run(Map.of("spec.name", "RedisClusterWiring", "redis.uris", uris))) {
            assertThat(ctx.findBean(io.lettuce.core.RedisClient.class)).isEmpty();
            IdempotencyStore bean = ctx.getBean(IdempotencyStore.class);
            assertThat(bean).isInstanceOf(RedisIdempotencyStore.class);
            String key = newKey();
            long token = ((AcquireResult.Acquired) join(bean.acquire(key, fingerprint("a"), Duration.ofSeconds(30))))
                .fencingToken();
            assertThat(join(bean.complete(key, token, response(201, "{}"), Duration.ofMinutes(1)))).isTrue();
            assertThat(join(bean.acquire(key, fingerprint("a"), Duration.ofSeconds(30))))
                .isEqualTo(new AcquireResult.Replay(response(201, "{}")));
        }
    }
}
