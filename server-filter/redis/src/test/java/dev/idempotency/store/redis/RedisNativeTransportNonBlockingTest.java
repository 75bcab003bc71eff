package dev.idempotency.store.redis;

import dev.idempotency.server.store.IdempotencyStore;
import dev.idempotency.store.tck.NonBlockingFilterSuite;
import dev.idempotency.testsupport.Http;
import dev.idempotency.testsupport.TestRedis;
import io.netty.channel.IoEventLoop;
import io.netty.channel.epoll.EpollIoHandler;
import io.netty.util.concurrent.EventExecutor;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.DisplayName;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestInstance;

import java.util.Map;
import java.util.UUID;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * S17 with the server and Lettuce both on Netty's native epoll transport, as the store's advice
 * for an application with {@code netty-transport-native-epoll} on its class path says: the whole
 * non-blocking suite under BlockHound, and each event loop that calls the store gets an epoll
 * connection of its own (this module's {@code native-transport} test run). Linux on x86-64 only
 * ({@link NativeTransport}).
 */
@TestInstance(TestInstance.Lifecycle.PER_CLASS)
class RedisNativeTransportNonBlockingTest extends NonBlockingFilterSuite {

    private static final String PREFIX = TestRedis.uniquePrefix("native-epoll");

    @Override
    protected Map<String, Object> storeProperties() {
        NativeTransport.require();
        // the three settings the store's INFO line names for a Lettuce on epoll
        return Map.of("redis.uri", TestRedis.uri(), "idempotency.store.redis.key-prefix", PREFIX,
            "micronaut.netty.event-loops.default.prefer-native-transport", true,
            "micronaut.server.netty.parent.prefer-native-transport", true,
            "micronaut.server.netty.use-native-transport", true);
    }

    @AfterAll
    void cleanUp() {
        TestRedis.deleteKeys(PREFIX);
    }

    @Test
    @DisplayName("S17: a server and Lettuce on epoll: the event loops that call the store get epoll connections of"
        + " their own, and every call blocks nothing")
    void serverAndLettuceOnEpoll() {
        assertThat(RedisConnector.lettuceChannel()).as("Lettuce's transport").isEqualTo("EpollSocketChannel");
        Http http = new Http(server().getURI());
        for (int i = 0; i < 8; i++) { // new connections land on the server's loops in turn
            String key = "\"" + UUID.randomUUID() + "\"";
            assertThat(http.postJson("/nb/mono", key, "{\"n\":" + i + "}").statusCode()).isEqualTo(201);
            assertThat(http.postJson("/nb/mono", key, "{\"n\":" + i + "}").headers().firstValue("Idempotent-Replayed"))
                .hasValue("true");
        }
        RedisIdempotencyStore store = (RedisIdempotencyStore) server().getApplicationContext().getBean(IdempotencyStore.class);
        assertThat(store.loopsWithOwnConnection()).as("the server's loops with a connection of their own").isNotEmpty()
            .allSatisfy((EventExecutor loop) -> assertThat(((IoEventLoop) loop).isIoType(EpollIoHandler.class))
                .as("%s runs epoll", loop).isTrue());
        assertThat(store.describe()).contains("a connection per event loop of Lettuce's transport (EpollSocketChannel)");
    }
}
