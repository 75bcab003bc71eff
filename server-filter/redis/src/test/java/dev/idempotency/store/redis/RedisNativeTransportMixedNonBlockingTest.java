package dev.idempotency.store.redis;

import dev.idempotency.server.store.IdempotencyStore;
import dev.idempotency.store.tck.NonBlockingFilterSuite;
import dev.idempotency.testsupport.Http;
import dev.idempotency.testsupport.TestRedis;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.DisplayName;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestInstance;

import java.net.http.HttpResponse;
import java.util.Map;
import java.util.UUID;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * S17 in the case an application gets by adding {@code netty-transport-native-epoll} to its class
 * path and nothing else: Lettuce then runs on epoll while micronaut's server stays on NIO, its
 * default. The whole non-blocking suite runs through that server under BlockHound, on real epoll
 * connections (this module's {@code native-transport} test run, the only one with the native
 * library on its class path); every store call goes out on the store's one shared connection,
 * and the store says so once, with the fix that {@link RedisNativeTransportNonBlockingTest}
 * applies. Linux on x86-64 only, where the library's native part exists ({@link NativeTransport}).
 */
@TestInstance(TestInstance.Lifecycle.PER_CLASS)
class RedisNativeTransportMixedNonBlockingTest extends NonBlockingFilterSuite {

    private static final String PREFIX = TestRedis.uniquePrefix("native-mixed");

    private StoreLog log;

    @Override
    protected Map<String, Object> storeProperties() {
        NativeTransport.require();
        return Map.of("redis.uri", TestRedis.uri(), "idempotency.store.redis.key-prefix", PREFIX);
    }

    /** Runs after the suite has started the server and before any request: the once-only line is written at the first call. */
    @BeforeAll
    void listen() {
        log = new StoreLog();
    }

    @AfterAll
    void cleanUp() {
        log.close();
        TestRedis.deleteKeys(PREFIX);
    }

    @Test
    @DisplayName("S17: a server on NIO with Lettuce on epoll: calls share the store's one connection, work, block"
        + " nothing, and the store says once what to change")
    void serverOnNioLettuceOnEpoll() {
        assertThat(RedisConnector.lettuceChannel()).as("Lettuce's transport").isEqualTo("EpollSocketChannel");
        Http http = new Http(server().getURI());
        String key = "\"" + UUID.randomUUID() + "\"";
        HttpResponse<byte[]> first = http.postJson("/nb/mono", key, "{\"n\":1}");
        HttpResponse<byte[]> replay = http.postJson("/nb/mono", key, "{\"n\":1}");
        assertThat(first.statusCode()).isEqualTo(201);
        assertThat(replay.headers().firstValue("Idempotent-Replayed")).hasValue("true");
        assertThat(replay.body()).isEqualTo(first.body());
        assertThat(http.postJson("/nb/mono", key, "{\"n\":2}").statusCode()).isEqualTo(422);

        RedisIdempotencyStore store = (RedisIdempotencyStore) server().getApplicationContext().getBean(IdempotencyStore.class);
        assertThat(store.loopsWithOwnConnection()).as("no NIO loop gets an epoll connection").isEmpty();
        assertThat(store.connections()).as("the shared connection only").hasSize(1);
        assertThat(log.otherTransportLine())
            .contains("(EpollSocketChannel)")
            .contains("micronaut.netty.event-loops.default.prefer-native-transport=true")
            .contains("-Dio.lettuce.core.epoll=false");
    }
}
