package dev.idempotency.store.redis;

import io.netty.channel.epoll.Epoll;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * The native transport the {@code RedisNativeTransport*} tests run on. They run only in the
 * module's {@code native-transport} test run, which exists on Linux x86-64 (a Maven profile
 * activated by the OS: the library's native part is for that platform) and puts
 * {@code netty-transport-native-epoll} on the class path; there epoll must load.
 */
final class NativeTransport {

    private NativeTransport() {
    }

    /** Fails, before the server starts, when epoll does not load. */
    static void require() {
        assertThat(Epoll.isAvailable())
            .as("Netty's epoll transport in the native-transport test run (Linux on x86-64): %s", Epoll.unavailabilityCause())
            .isTrue();
    }
}
