package dev.idempotency.store.redis;

import ch.qos.logback.classic.Level;
import dev.idempotency.server.store.AcquireResult;
import dev.idempotency.server.store.IdempotencyStore;
import dev.idempotency.server.store.IdempotencyStoreException;
import dev.idempotency.server.store.StoredResponse;
import dev.idempotency.testsupport.Http;
import dev.idempotency.testsupport.LogCapture;
import dev.idempotency.testsupport.RedisServerProcess;
import io.lettuce.core.RedisClient;
import io.lettuce.core.RedisURI;
import io.lettuce.core.api.StatefulRedisConnection;
import io.lettuce.core.codec.ByteArrayCodec;
import io.micronaut.context.ApplicationContext;
import io.micronaut.runtime.server.EmbeddedServer;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.DisplayName;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestInstance;

import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.time.Clock;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/**
 * S24 on a real primary with a real replica ({@code --replicaof}), both processes of this test.
 * The replica is made to fall behind by stopping its process (SIGSTOP): its connection to the
 * primary stays open, it just confirms nothing, which is what a replica that lags or is cut off
 * looks like to {@code WAIT}.
 */
@TestInstance(TestInstance.Lifecycle.PER_CLASS)
class RedisWaitReplicasTest {

    private static final Duration LEASE = Duration.ofSeconds(30);
    private static final byte[] FINGERPRINT = new byte[32];

    RedisServerProcess primary;
    RedisServerProcess replica;
    RedisClient client;
    StatefulRedisConnection<byte[], byte[]> onReplica;
    RedisIdempotencyStore store;

    @BeforeAll
    void start() {
        primary = RedisServerProcess.start();
        replica = RedisServerProcess.start("--replicaof", "127.0.0.1", Integer.toString(primary.port()));
        client = RedisClient.create();
        onReplica = client.connect(ByteArrayCodec.INSTANCE, RedisURI.create(replica.uri()));
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(20);
        while (!onReplica.sync().info("replication").contains("master_link_status:up")) {
            assertThat(System.nanoTime()).as("the replica's link to its primary is up").isLessThan(deadline);
            RedisServerProcess.sleep(50);
        }
        store = new RedisIdempotencyStore(client, List.of(RedisURI.create(primary.uri())), Clock.systemUTC(),
            config(1));
    }

    private static RedisIdempotencyStoreConfigurationProperties config(int replicas) {
        RedisIdempotencyStoreConfigurationProperties config = new RedisIdempotencyStoreConfigurationProperties();
        config.setWaitReplicas(replicas);
        config.setWaitTimeout(Duration.ofMillis(500));
        config.setCommandTimeout(Duration.ofSeconds(2));
        return config;
    }

    @AfterEach
    void running() {
        replica.resume(); // a test that failed half way must not leave the replica stopped
        // the store does not wait on a connection for a while after a short WAIT: let that pass
        RedisServerProcess.sleep(ReplicaWait.SHORT_PROBE_MILLIS + 50);
    }

    @AfterAll
    void stop() {
        if (store != null) {
            store.close();
        }
        onReplica.close();
        client.shutdown(0, 2, TimeUnit.SECONDS);
        replica.close();
        primary.close();
    }

    private byte[] onReplica(String storeKey) {
        return onReplica.sync().get(store.recordKeyText(storeKey).getBytes(StandardCharsets.UTF_8));
    }

    private static StoredResponse ok() {
        return new StoredResponse(201, Map.of(), "{\"ok\":true}".getBytes(StandardCharsets.UTF_8), false);
    }

    @Test
    @DisplayName("S24: with wait-replicas=1 an acquire answers only once the replica has the record, and a completion"
        + " once it has the result")
    void acquireAndCompletionReachTheReplica() throws Exception {
        String key = UUID.randomUUID().toString();
        AcquireResult acquired = store.acquire(key, FINGERPRINT, LEASE).toCompletableFuture().get(5, TimeUnit.SECONDS);
        assertThat(acquired).isInstanceOf(AcquireResult.Acquired.class);
        // read at once, on the replica: WAIT answered after the replica confirmed the write
        assertThat(onReplica(key)).isNotNull();
        assertThat(onReplica(key)[1]).isEqualTo(RedisRecords.IN_PROGRESS);
        long token = ((AcquireResult.Acquired) acquired).fencingToken();
        assertThat(store.complete(key, token, ok(), Duration.ofHours(1)).toCompletableFuture().get(5, TimeUnit.SECONDS))
            .isTrue();
        assertThat(onReplica(key)[1]).isEqualTo(RedisRecords.COMPLETED);
        assertThat(store.underReplicatedWrites()).isZero();
        assertThat(store.describe()).contains("writes confirmed by 1 replica(s) within 500 ms");
    }

    @Test
    @DisplayName("S24: acquires sent together (their WAITs shared per turn of the connection), each answered only once"
        + " the replica has its record")
    void concurrentAcquiresShareAWait() throws Exception {
        List<String> keys = new java.util.ArrayList<>();
        List<java.util.concurrent.CompletableFuture<AcquireResult>> acquires = new java.util.ArrayList<>();
        java.util.concurrent.ExecutorService checks = java.util.concurrent.Executors.newSingleThreadExecutor();
        try {
            for (int i = 0; i < 50; i++) {
                String key = UUID.randomUUID().toString();
                keys.add(key);
                // checked as each one is answered (off Lettuce's threads): the replica has its record by then
                acquires.add(store.acquire(key, FINGERPRINT, LEASE).toCompletableFuture()
                    .thenApplyAsync(result -> {
                        assertThat(onReplica(key)).as("record of %s on the replica", key).isNotNull();
                        return result;
                    }, checks));
            }
            for (java.util.concurrent.CompletableFuture<AcquireResult> acquire : acquires) {
                assertThat(acquire.get(10, TimeUnit.SECONDS)).isInstanceOf(AcquireResult.Acquired.class);
            }
        } finally {
            checks.shutdown();
        }
        assertThat(keys).allSatisfy(key -> assertThat(onReplica(key)).isNotNull());
    }

    @Test
    @DisplayName("S24: an acquire that no replica confirms fails closed (IdempotencyStoreException, key released);"
        + " once the replica is back the key is acquired")
    void unconfirmedAcquireFailsClosed() throws Exception {
        String key = UUID.randomUUID().toString();
        replica.pause();
        assertThatThrownBy(() -> store.acquire(key, FINGERPRINT, LEASE).toCompletableFuture().get(5, TimeUnit.SECONDS))
            .isInstanceOf(ExecutionException.class)
            .cause().isInstanceOf(IdempotencyStoreException.class)
            .hasMessageContaining("was confirmed by 0 of 1 replica(s) within 500 ms")
            .hasMessageContaining("the record is released and the request not run");
        // the release: the primary keeps a tombstone (or nothing), never a lock of a request that did not run
        byte[] left = onPrimary(key);
        assertThat(left == null || left[1] == RedisRecords.RELEASED).as("record left on the primary").isTrue();
        // right after a short WAIT the next acquire is not even written: the connection is known short
        String next = UUID.randomUUID().toString();
        assertThatThrownBy(() -> store.acquire(next, FINGERPRINT, LEASE).toCompletableFuture().get(5, TimeUnit.SECONDS))
            .cause().isInstanceOf(IdempotencyStoreException.class)
            .hasMessageContaining("was not sent: the primary's last WAIT");
        assertThat(onPrimary(next)).isNull();
        replica.resume();
        RedisServerProcess.sleep(ReplicaWait.SHORT_PROBE_MILLIS + 50);
        assertThat(store.acquire(key, FINGERPRINT, LEASE).toCompletableFuture().get(5, TimeUnit.SECONDS))
            .isInstanceOf(AcquireResult.Acquired.class);
    }

    private byte[] onPrimary(String storeKey) {
        try (StatefulRedisConnection<byte[], byte[]> c = client.connect(ByteArrayCodec.INSTANCE, RedisURI.create(primary.uri()))) {
            return c.sync().get(store.recordKeyText(storeKey).getBytes(StandardCharsets.UTF_8));
        }
    }

    @Test
    @DisplayName("S24: a completion that no replica confirms still stands (the caller gets the result), waited for"
        + " three times, then counted and logged with what a failover would lose")
    void unconfirmedCompletionStandsAndIsReported() throws Exception {
        String key = UUID.randomUUID().toString();
        long token = ((AcquireResult.Acquired) store.acquire(key, FINGERPRINT, LEASE).toCompletableFuture()
            .get(5, TimeUnit.SECONDS)).fencingToken();
        long before = store.underReplicatedWrites();
        replica.pause();
        try (LogCapture log = LogCapture.of(RedisIdempotencyStore.class, Level.WARN).start()) {
            assertThat(store.complete(key, token, ok(), Duration.ofHours(1)).toCompletableFuture().get(5, TimeUnit.SECONDS))
                .isTrue();
            assertThat(store.underReplicatedWrites()).isEqualTo(before + 1);
            assertThat(log.lines(Level.WARN)).anySatisfy(line -> assertThat(line)
                .contains("complete of " + store.recordKeyText(key) + " is on the primary, but only 0 of 1 replica(s)")
                .contains("after three waits of 500 ms")
                .contains("a retry runs the handler again"));
        }
        assertThat(onPrimary(key)[1]).isEqualTo(RedisRecords.COMPLETED);
        replica.resume();
    }

    @Test
    @DisplayName("S24: a wait-timeout that is not shorter than command-timeout is refused, naming both settings")
    void waitTimeoutMustFitTheCommandTimeout() {
        RedisIdempotencyStoreConfigurationProperties config = config(1);
        config.setWaitTimeout(Duration.ofSeconds(2));
        assertThatThrownBy(() -> new RedisIdempotencyStore(client, List.of(RedisURI.create(primary.uri())),
            Clock.systemUTC(), config))
            .isInstanceOf(IllegalArgumentException.class)
            .hasMessageContaining("idempotency.store.redis.wait-timeout (2000 ms) must be shorter than"
                + " idempotency.store.redis.command-timeout (2000 ms)");
        assertThatThrownBy(() -> config.setWaitReplicas(-1)).hasMessageContaining("wait-replicas must be 0");
    }

    @Test
    @DisplayName("S24/S19: through the filter, an acquire the replica does not confirm is answered 503"
        + " idempotency-store-unavailable with Retry-After, and the handler does not run")
    void filterAnswers503() {
        try (ApplicationContext app = ApplicationContext.run(Map.of(
            "spec.name", TestApi.SPEC,
            "micronaut.server.port", -1,
            "redis.uri", primary.uri(),
            "idempotency.store.redis.wait-replicas", 1,
            "idempotency.store.redis.wait-timeout", "500ms"))) {
            assertThat(app.getBean(IdempotencyStore.class)).isInstanceOf(RedisIdempotencyStore.class);
            Http http = new Http(app.getBean(EmbeddedServer.class).start().getURI());
            String test = "wait-" + UUID.randomUUID();
            String key = "\"" + UUID.randomUUID() + "\"";
            assertThat(http.postJson("/redis-api/" + test, "\"" + UUID.randomUUID() + "\"", "{}").statusCode())
                .isEqualTo(200);
            replica.pause();
            HttpResponse<byte[]> refused = http.postJson("/redis-api/" + test, key, "{}");
            assertThat(refused.statusCode()).isEqualTo(503);
            assertThat(refused.headers().firstValue("Retry-After")).isPresent();
            assertThat(Http.body(refused)).contains("\"code\":\"idempotency-store-unavailable\"");
            assertThat(TestApi.executions(test)).isEqualTo(1);
            replica.resume();
            RedisServerProcess.sleep(ReplicaWait.SHORT_PROBE_MILLIS + 50);
            assertThat(http.postJson("/redis-api/" + test, key, "{}").statusCode()).isEqualTo(200);
            assertThat(TestApi.executions(test)).isEqualTo(2);
        }
    }
}
