package dev.idempotency.store.redis;

import io.lettuce.core.resource.Transports;
import io.netty.channel.IoHandler;

/** The I/O handler an event loop must run for Lettuce's socket channels, or {@code null} if unknown. */
final class LoopTransport {

    private LoopTransport() {
    }

    /** Lettuce's socket channel class, by name. */
    static final String CHANNEL = Transports.socketChannelClass().getSimpleName();
    static final Class<? extends IoHandler> SOCKET_HANDLER = socketHandler();

    @SuppressWarnings("unchecked")
    private static Class<? extends IoHandler> socketHandler() {
        try {
            String channel = Transports.socketChannelClass().getName();
            String handler = switch (channel) {
                case "io.netty.channel.socket.nio.NioSocketChannel" -> "io.netty.channel.nio.NioIoHandler";
                case "io.netty.channel.epoll.EpollSocketChannel" -> "io.netty.channel.epoll.EpollIoHandler";
                case "io.netty.channel.kqueue.KQueueSocketChannel" -> "io.netty.channel.kqueue.KQueueIoHandler";
                case "io.netty.channel.uring.IoUringSocketChannel" -> "io.netty.channel.uring.IoUringIoHandler";
                default -> null;
            };
            return handler == null ? null
                : (Class<? extends IoHandler>) Class.forName(handler, false, LoopTransport.class.getClassLoader());
        } catch (ClassNotFoundException | LinkageError e) {
            return null; // a Netty without I/O handlers (before 4.2): the shared connection only
        }
    }
}
