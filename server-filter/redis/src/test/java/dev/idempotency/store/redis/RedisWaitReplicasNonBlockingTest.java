package dev.idempotency.store.redis;

import dev.idempotency.store.tck.NonBlockingFilterSuite;
import dev.idempotency.testsupport.Http;
import dev.idempotency.testsupport.RedisServerProcess;
import dev.idempotency.testsupport.RedisWire;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.DisplayName;
import org.junit.jupiter.api.Test;

import java.io.IOException;
import java.net.URI;
import java.net.http.HttpResponse;
import java.util.Map;
import java.util.UUID;
import java.util.concurrent.TimeUnit;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * S17/S24: with {@code wait-replicas=1} every write is followed by a {@code WAIT}, and an acquire
 * the replica does not confirm is released before its 503: none of it blocks an event loop
 * (BlockHound). A primary and a replica of this test's own.
 */
class RedisWaitReplicasNonBlockingTest extends NonBlockingFilterSuite {

    private RedisServerProcess primary;
    private RedisServerProcess replica;

    @Override
    protected Map<String, Object> storeProperties() {
        primary = RedisServerProcess.start();
        replica = RedisServerProcess.start("--replicaof", "127.0.0.1", Integer.toString(primary.port()));
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(20);
        while (!linkUp(replica) && System.nanoTime() < deadline) {
            RedisServerProcess.sleep(50);
        }
        return Map.of("redis.uri", primary.uri(),
            "idempotency.store.redis.wait-replicas", 1,
            "idempotency.store.redis.wait-timeout", "500ms");
    }

    private static boolean linkUp(RedisServerProcess replica) {
        try {
            return RedisWire.info(URI.create(replica.uri()), "replication", 2000).contains("master_link_status:up");
        } catch (IOException e) {
            return false;
        }
    }

    @AfterAll
    void stopRedis() {
        if (replica != null) {
            replica.close();
        }
        if (primary != null) {
            primary.close();
        }
    }

    @Test
    @DisplayName("S24/S17: an acquire the replica does not confirm is released and answered 503, blocking nothing")
    void unconfirmedAcquire() {
        Http http = new Http(server().getURI());
        replica.pause();
        try {
            HttpResponse<byte[]> refused = http.postJson("/nb/blocking", "\"" + UUID.randomUUID() + "\"", "{}");
            assertThat(refused.statusCode()).isEqualTo(503);
            assertThat(refused.headers().firstValue("Retry-After")).isPresent();
        } finally {
            replica.resume();
        }
    }
}
