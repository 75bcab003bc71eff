package dev.idempotency.store.tck;

import reactor.blockhound.BlockHound;
import reactor.blockhound.BlockingOperationError;

import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;

/**
 * BlockHound, installed once per JVM, recording every blocking call made on a non-blocking
 * thread instead of throwing it into whatever code made it (where a server might swallow it).
 *
 * <p>Non-blocking threads are Netty's event-loop threads (the HTTP server's, and the Redis
 * client's) and Reactor's non-blocking schedulers, as the Netty and Reactor integrations that
 * BlockHound loads declare them. Allowed, because they are not the code under test: console
 * logging of the test's own logback (an application would use an asynchronous appender), the
 * JDK's class loading, Micronaut's one-time scan of {@code META-INF/services} files when a
 * class of its own is first used, and Netty's adaptive buffer allocator, which takes a write lock
 * to retire a magazine when it grows its magazine set under contention (Netty's own BlockHound
 * integration does not yet list that path; it is allocator bookkeeping, not I/O), and the idle
 * wait of Netty's in-process transport ({@code LocalIoHandler.run} parks where a socket loop
 * waits in its selector; tests use such loops to stand in for a transport other than Lettuce's,
 * and the work they are given runs as tasks, outside that wait).
 *
 * <p>The JVM must run with {@code -XX:+AllowRedefinitionToAddDeleteMethods} (JDK 13+); the
 * build gives that flag to the {@code *NonBlockingTest} classes, which run in a JVM of their own.
 */
public final class NonBlockingGuard {

    private static final List<Violation> VIOLATIONS = new CopyOnWriteArrayList<>();
    private static volatile boolean installed;

    private NonBlockingGuard() {
    }

    /** Installs BlockHound unless it already is. */
    public static synchronized void install() {
        if (installed) {
            return;
        }
        BlockHound.builder()
            .loadIntegrations()
            .allowBlockingCallsInside("ch.qos.logback.classic.Logger", "callAppenders")
            .allowBlockingCallsInside("java.lang.ClassLoader", "loadClass")
            .allowBlockingCallsInside("io.micronaut.core.io.service.ServiceScanner$DefaultServiceCollector", "collect")
            .allowBlockingCallsInside("io.netty.buffer.AdaptivePoolingAllocator$Magazine", "free")
            .allowBlockingCallsInside("io.netty.channel.local.LocalIoHandler", "run")
            // the JDK pool's main lock, held for a moment when it starts a worker thread: Micronaut
            // hands a blocking route over from the event loop, sometimes while the pool grows
            .allowBlockingCallsInside("java.util.concurrent.ThreadPoolExecutor", "addWorker")
            .blockingMethodCallback(method -> VIOLATIONS.add(
                new Violation(Thread.currentThread().getName(), new BlockingOperationError(method))))
            .install();
        installed = true;
    }

    /**
     * A blocking call on a non-blocking thread.
     *
     * @param thread the thread's name
     * @param error  what BlockHound reports, with the stack that made the call
     */
    public record Violation(String thread, BlockingOperationError error) {
    }

    /** @return the blocking calls seen on non-blocking threads since the last {@link #clear()} */
    public static List<Violation> violations() {
        return List.copyOf(VIOLATIONS);
    }

    /** Forgets the violations seen so far. */
    public static void clear() {
        VIOLATIONS.clear();
    }

    /**
     * @return the violations, each with the thread and the stack that made the blocking call, for a
     *     failure message
     */
    public static String describe(List<Violation> violations) {
        StringBuilder sb = new StringBuilder();
        for (Violation v : violations) {
            sb.append(v.error().getMessage()).append(" on thread ").append(v.thread()).append('\n');
            for (StackTraceElement frame : v.error().getStackTrace()) {
                sb.append("    at ").append(frame).append('\n');
            }
        }
        return sb.toString();
    }
}
