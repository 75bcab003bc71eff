package dev.idempotency.testsupport;

import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.InetSocketAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;

/**
 * A loopback TCP forwarder in front of a server (PostgreSQL, say) that tests and the outage drill
 * can take away, {@link #stop()}: the listener closed, so new connections are refused, and every
 * open connection reset; and bring back on the same port, {@link #start()}. Optionally a delay
 * line (every byte forwarded {@code delay} after it arrived, in order, both ways), and a target
 * that can be moved ({@link #retarget}), as a virtual IP moves to a promoted replica.
 */
public final class TcpProxy implements AutoCloseable {

    private volatile String targetHost;
    private volatile int targetPort;
    private final long delayNanos;
    private final int port;
    private final List<Socket> sockets = new CopyOnWriteArrayList<>();
    private volatile ServerSocket server;

    /**
     * Starts forwarding from a free loopback port.
     *
     * @param targetHost the server's host
     * @param targetPort the server's port
     * @throws IOException when no port can be bound
     */
    public TcpProxy(String targetHost, int targetPort) throws IOException {
        this(targetHost, targetPort, java.time.Duration.ZERO);
    }

    /**
     * Starts forwarding from a free loopback port, each byte {@code delay} after it arrived.
     *
     * @param targetHost the server's host
     * @param targetPort the server's port
     * @param delay      how long every byte is held, each way (zero: none)
     * @throws IOException when no port can be bound
     */
    public TcpProxy(String targetHost, int targetPort, java.time.Duration delay) throws IOException {
        this.targetHost = targetHost;
        this.targetPort = targetPort;
        this.delayNanos = delay.toNanos();
        ServerSocket s = new ServerSocket(0);
        this.port = s.getLocalPort();
        s.close();
        start();
    }

    /** Connections made from now on go to {@code host:port}; open ones stay where they are until {@link #stop()}. */
    public void retarget(String host, int port) {
        this.targetHost = host;
        this.targetPort = port;
    }

    /** @return the port the proxy listens on */
    public int port() {
        return port;
    }

    /** Listens again on the same port. @throws IOException when the port cannot be bound */
    public synchronized void start() throws IOException {
        ServerSocket s = null;
        for (int attempt = 0; s == null; attempt++) {
            ServerSocket candidate = new ServerSocket();
            candidate.setReuseAddress(true);
            try {
                candidate.bind(new InetSocketAddress("127.0.0.1", port));
                s = candidate;
            } catch (java.net.BindException e) {
                candidate.close();
                if (attempt == 100) {
                    throw e;
                }
                RedisServerProcess.sleep(20); // a listener closed just before may still hold the port
            }
        }
        ServerSocket listening = s;
        server = listening;
        Thread acceptor = new Thread(() -> accept(listening), "tcp-proxy-accept");
        acceptor.setDaemon(true);
        acceptor.start();
    }

    /** The server becomes unreachable: new connections are refused, open ones are reset. */
    public synchronized void stop() throws IOException {
        server.close();
        for (Socket socket : sockets) {
            try {
                socket.setSoLinger(true, 0); // a reset, as when the network path goes away
                socket.close();
            } catch (IOException ignored) {
                // already gone
            }
        }
        sockets.clear();
    }

    private void accept(ServerSocket s) {
        while (!s.isClosed()) {
            try {
                Socket client = s.accept();
                Socket upstream = new Socket(targetHost, targetPort);
                // what the proxy writes goes at once, as the two ends' own sockets would send it: with Nagle's
                // algorithm a small answer waits for the peer's delayed ACK, about 40 ms on Linux
                client.setTcpNoDelay(true);
                upstream.setTcpNoDelay(true);
                synchronized (this) {
                    // stop() may have run while this connection was being made: it must not survive it
                    if (s.isClosed()) {
                        client.close();
                        upstream.close();
                        continue;
                    }
                    sockets.add(client);
                    sockets.add(upstream);
                }
                pump(client, upstream);
                pump(upstream, client);
            } catch (IOException e) {
                // closed by stop(), or the target refused: the client sees its connection close
            }
        }
    }

    private void pump(Socket from, Socket to) {
        Thread t = new Thread(() -> {
            byte[] buf = new byte[8192];
            try (InputStream in = from.getInputStream(); OutputStream out = to.getOutputStream()) {
                int n;
                if (delayNanos == 0) {
                    while ((n = in.read(buf)) >= 0) {
                        out.write(buf, 0, n);
                        out.flush();
                    }
                } else {
                    delayed(in, out, buf);
                }
            } catch (IOException ignored) {
                // connection cut
            } finally {
                try {
                    from.close();
                    to.close();
                } catch (IOException ignored) {
                    // already closed
                }
            }
        }, "tcp-proxy-pump");
        t.setDaemon(true);
        t.start();
    }

    /** Forwards what {@code in} reads to {@code out}, each chunk {@code delayNanos} after it arrived, in order. */
    private void delayed(InputStream in, OutputStream out, byte[] buf) throws IOException {
        java.util.concurrent.LinkedBlockingQueue<Object[]> line = new java.util.concurrent.LinkedBlockingQueue<>();
        Object[] end = new Object[0];
        Thread writer = new Thread(() -> {
            try {
                for (Object[] chunk = line.take(); chunk != end; chunk = line.take()) {
                    long wait = (Long) chunk[0] - System.nanoTime();
                    if (wait > 0) {
                        java.util.concurrent.locks.LockSupport.parkNanos(wait);
                    }
                    out.write((byte[]) chunk[1]);
                    out.flush();
                }
            } catch (IOException | InterruptedException e) {
                // connection cut
            }
        }, "tcp-proxy-delay");
        writer.setDaemon(true);
        writer.start();
        try {
            int n;
            while ((n = in.read(buf)) >= 0) {
                line.add(new Object[] {System.nanoTime() + delayNanos, java.util.Arrays.copyOf(buf, n)});
            }
        } finally {
            line.add(end);
            try {
                writer.join(java.util.concurrent.TimeUnit.NANOSECONDS.toMillis(delayNanos) + 1000);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            }
        }
    }

    @Override
    public void close() throws IOException {
        stop();
    }
}
