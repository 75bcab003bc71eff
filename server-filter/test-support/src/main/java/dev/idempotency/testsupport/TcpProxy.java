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
 * open connection reset; and bring back on the same port, {@link #start()}.
 */
public final class TcpProxy implements AutoCloseable {

    private final String targetHost;
    private final int targetPort;
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
        this.targetHost = targetHost;
        this.targetPort = targetPort;
        ServerSocket s = new ServerSocket(0);
        this.port = s.getLocalPort();
        s.close();
        start();
    }

    /** @return the port the proxy listens on */
    public int port() {
        return port;
    }

    /** Listens again on the same port. @throws IOException when the port cannot be bound */
    public synchronized void start() throws IOException {
        ServerSocket s = new ServerSocket();
        s.setReuseAddress(true);
        s.bind(new InetSocketAddress("127.0.0.1", port));
        server = s;
        Thread acceptor = new Thread(() -> accept(s), "tcp-proxy-accept");
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
                while ((n = in.read(buf)) >= 0) {
                    out.write(buf, 0, n);
                    out.flush();
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

    @Override
    public void close() throws IOException {
        stop();
    }
}
