package dev.idempotency.testsupport;

import java.io.IOException;
import java.io.InterruptedIOException;
import java.io.OutputStream;
import java.io.UncheckedIOException;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.util.List;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;

/**
 * A fault-injecting HTTP/1.1 TCP proxy for end-to-end tests and demos, <b>loopback only</b>: it
 * listens on {@code 127.0.0.1} (a free port unless {@link FaultProxyBuilder#port(int)} gives one) and
 * forwards to an upstream on a loopback address; {@link FaultProxyBuilder#upstream(InetSocketAddress)}
 * rejects any other address with an {@link IllegalArgumentException}, and nothing here resolves a
 * host name.
 *
 * Faults: reset, request or response delay, drop of the response after the upstream answered,
 * refused connections, and down (nothing listening), each by chance or scripted; the same seed
 * gives the same decisions for the same sequence of requests. What each fault does on the wire,
 * how messages are forwarded, and the threads: see this package's javadoc.
 */
public final class FaultProxy implements AutoCloseable {

    /** How {@link FaultProxyBuilder#dropResponseProbability dropped responses} end the client connection. */
    public enum DropMode {
        /** A normal close: FIN, the client reads end of stream before any response byte. */
        CLOSE,
        /** {@code SO_LINGER 0} then close: RST, the client reads "connection reset". */
        RESET
    }

    /** A fault to script with {@link #failNext(Fault...)}. */
    public enum Fault {
        /** Forward normally. */
        NONE,
        /** Reset before forwarding. */
        RESET,
        /** Hold the request for the configured {@link FaultProxyBuilder#delay request delay} (zero if none). */
        DELAY_REQUEST,
        /** Hold the response for the configured {@link FaultProxyBuilder#responseDelay response delay}. */
        DELAY_RESPONSE,
        /** Forward, read the whole response, end the client connection without it. */
        DROP_RESPONSE
    }

    /**
     * The faults decided for one request: its 0-based index in arrival order (requests refused
     * while {@linkplain #setDown down} draw nothing and get no index) and what was applied.
     */
    public record Decision(long request, boolean reset, boolean delayRequest, boolean delayResponse,
                           boolean dropResponse) {
        /** Whether the request passes untouched. */
        public boolean none() {
            return !reset && !delayRequest && !delayResponse && !dropResponse;
        }
    }

    static final InetAddress BIND = Sockets.loopbackV4();
    private static final AtomicInteger INSTANCES = new AtomicInteger();

    private final InetSocketAddress upstream;
    private final FaultPlan plan;
    private final int requestedPort;


    private final Object lifecycle = new Object();
    private final Set<Socket> sockets = ConcurrentHashMap.newKeySet();
    private final ExecutorService threads;
    private final Set<Thread> threadsCreated = ConcurrentHashMap.newKeySet();
    private volatile ServerSocket listener;
    private volatile CountDownLatch acceptorExited = new CountDownLatch(0);
    private volatile int port = -1;
    private volatile boolean started;
    private volatile boolean down;
    private volatile boolean closed;

    private final AtomicLong connections = new AtomicLong();
    private final AtomicLong requestsReceived = new AtomicLong();
    private final AtomicLong requestsForwarded = new AtomicLong();
    private final AtomicLong responsesForwarded = new AtomicLong();
    private final AtomicLong responsesDropped = new AtomicLong();
    private final AtomicLong resets = new AtomicLong();
    private final AtomicLong delays = new AtomicLong();
    private final AtomicLong refusals = new AtomicLong();
    private final AtomicLong upstreamFailures = new AtomicLong();

    FaultProxy(FaultProxyBuilder b) {
        this.upstream = b.upstream;
        this.requestedPort = b.port;
        this.plan = new FaultPlan(b.seed != null ? b.seed : System.nanoTime(), b.resetProbability,
            b.requestDelay, b.requestDelayProbability, b.responseDelay, b.responseDelayProbability, b.dropProbability,
            b.dropMode, b.refuseProbability);
        this.down = b.down;
        int instance = INSTANCES.incrementAndGet();
        AtomicInteger n = new AtomicInteger();
        this.threads = Executors.newCachedThreadPool(r -> {
            Thread t = new Thread(r, "fault-proxy-" + instance + "-" + n.incrementAndGet());
            t.setDaemon(true);
            threadsCreated.removeIf(old -> !old.isAlive()); // ended idle workers
            threadsCreated.add(t);
            return t;
        });
    }

    public static FaultProxyBuilder builder() {
        return new FaultProxyBuilder();
    }

    /**
     * Binds {@code 127.0.0.1} (the configured port, else a free one) and starts accepting; when
     * built {@linkplain FaultProxyBuilder#down(boolean) down} it binds to learn the port, then stops
     * listening at once.
     *
     * @return this proxy, for {@code try (var p = FaultProxy.builder()...build().start())}
     * @throws UncheckedIOException when the port cannot be bound
     * @throws IllegalStateException when already started or closed
     */
    public FaultProxy start() {
        synchronized (lifecycle) {
            if (closed || started) {
                throw new IllegalStateException(closed ? "closed" : "already started");
            }
            ServerSocket ss = bind(requestedPort);
            port = ss.getLocalPort();
            started = true;
            if (down) {
                Sockets.closeQuietly(ss);
            } else {
                listen(ss);
            }
        }
        return this;
    }

    /** The port the proxy listens on (on 127.0.0.1). */
    public int port() {
        int p = port;
        if (p < 0) {
            throw new IllegalStateException("not started");
        }
        return p;
    }

    /** {@code http://127.0.0.1:<port>}, no trailing slash. */
    public String baseUrl() {
        return "http://127.0.0.1:" + port();
    }

    /** The upstream this proxy forwards to. */
    public InetSocketAddress upstream() {
        return upstream;
    }

    /** The seed of the fault decisions (the configured one, else the one picked at build time). */
    public long seed() {
        return plan.seed();
    }

    /**
     * Turns the "down" switch on or off at run time. On: the listening socket is closed (new
     * connections get "connection refused" from the kernel) and the next request on any open
     * connection is answered with a RST, unforwarded. Off: listens on the same port again.
     *
     * @throws UncheckedIOException when the port cannot be bound again
     */
    public void setDown(boolean down) {
        synchronized (lifecycle) {
            if (!started || closed) {
                this.down = down;
                return;
            }
            if (down) {
                this.down = true;
                ServerSocket ss = listener;
                listener = null;
                if (ss != null) {
                    Sockets.closeQuietly(ss);
                    // Closing a socket another thread is blocked accepting on only signals that
                    // thread; the kernel keeps listening until it returns. Wait for it, so the
                    // port refuses connections as soon as this method returns.
                    awaitAcceptorExit();
                }
            } else {
                if (listener == null) {
                    listen(bind(port)); // throws, and the proxy stays down, when the port is taken
                }
                this.down = false;
            }
        }
    }

    public boolean isDown() {
        return down;
    }

    /**
     * Scripts the faults of the next requests, one per request in arrival order, in place of the
     * random decision ({@link Fault#NONE} lets one through). Queued after earlier scripted ones.
     */
    public void failNext(Fault... faults) {
        plan.script(faults);
    }

    /** The decisions so far (the latest 10,000), in arrival order. */
    public List<Decision> decisions() {
        return plan.decisions();
    }

    /** TCP connections accepted, refused ones included. */
    public long connections() {
        return connections.get();
    }

    /** Complete requests read from clients (whatever then happened to them). */
    public long requestsReceived() {
        return requestsReceived.get();
    }

    /** Requests written in full to the upstream. */
    public long requestsForwarded() {
        return requestsForwarded.get();
    }

    /** Responses written in full to the client. */
    public long responsesForwarded() {
        return responsesForwarded.get();
    }

    /** Responses read in full from the upstream and then withheld (drop fault). */
    public long responsesDropped() {
        return responsesDropped.get();
    }

    /** Client connections reset by the reset fault (before forwarding). */
    public long resets() {
        return resets.get();
    }

    /** Delays begun (request and response delays; counted when the hold starts). */
    public long delays() {
        return delays.get();
    }

    /**
     * Refusals: connections reset on accept by the refuse fault, plus requests reset unforwarded
     * while down. Connections the kernel refuses while down never reach the proxy and are not
     * counted.
     */
    public long refusals() {
        return refusals.get();
    }

    /** Times the upstream could not be connected to (the client connection was then reset). */
    public long upstreamFailures() {
        return upstreamFailures.get();
    }

    /**
     * Stops listening, closes every open connection (a plain close: FIN), interrupts delays and
     * waits until every thread of this proxy has ended. Idempotent.
     */
    @Override
    public void close() {
        synchronized (lifecycle) {
            if (closed) {
                return;
            }
            closed = true;
            ServerSocket ss = listener;
            listener = null;
            if (ss != null) {
                Sockets.closeQuietly(ss);
            }
        }
        for (Socket s : sockets) {
            Sockets.closeQuietly(s);
        }
        threads.shutdownNow();
        try {
            long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(10);
            boolean stopped = threads.awaitTermination(10, TimeUnit.SECONDS);
            // a pool reports termination while its last workers are still on their way out
            for (Thread t : threadsCreated) {
                long left = TimeUnit.NANOSECONDS.toMillis(deadline - System.nanoTime());
                t.join(Math.max(1, left));
                stopped &= !t.isAlive();
            }
            if (!stopped) {
                throw new IllegalStateException("fault proxy threads did not stop within 10 s");
            }
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }

    @Override
    public String toString() {
        return "FaultProxy[127.0.0.1:" + port + " -> " + upstream.getAddress().getHostAddress() + ":"
            + upstream.getPort() + ", seed=" + plan.seed() + ", down=" + down + "]";
    }

    // ---------------------------------------------------------------- accepting

    private ServerSocket bind(int p) {
        try {
            ServerSocket ss = new ServerSocket();
            ss.setReuseAddress(true);
            ss.bind(new InetSocketAddress(BIND, p), 128);
            return ss;
        } catch (IOException e) {
            throw new UncheckedIOException("fault proxy could not listen on 127.0.0.1:" + p, e);
        }
    }

    private void listen(ServerSocket ss) {
        CountDownLatch exited = new CountDownLatch(1);
        listener = ss;
        acceptorExited = exited;
        threads.execute(() -> {
            try {
                acceptLoop(ss);
            } finally {
                Sockets.closeQuietly(ss);
                exited.countDown();
            }
        });
    }

    private void awaitAcceptorExit() {
        try {
            if (!acceptorExited.await(10, TimeUnit.SECONDS)) {
                throw new IllegalStateException("fault proxy accept thread did not stop within 10 s");
            }
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }

    private void acceptLoop(ServerSocket ss) {
        while (!closed && !ss.isClosed()) {
            Socket client;
            try {
                client = ss.accept();
            } catch (IOException e) {
                return; // closed by setDown(true) or close()
            }
            connections.incrementAndGet();
            boolean refuse;
            refuse = plan.refuseConnection();
            if (refuse) {
                refusals.incrementAndGet();
                Sockets.reset(client);
                continue;
            }
            if (!register(client)) {
                return;
            }
            try {
                threads.execute(() -> serve(client));
            } catch (RuntimeException rejected) { // shut down meanwhile
                Sockets.closeQuietly(client);
                return;
            }
        }
    }

    private boolean register(Socket s) {
        sockets.add(s);
        if (closed) {
            sockets.remove(s);
            Sockets.closeQuietly(s);
            return false;
        }
        return true;
    }

    // ---------------------------------------------------------------- serving one connection

    private void serve(Socket client) {
        Socket up = null;
        try {
            client.setTcpNoDelay(true);
            HttpMessages.Reader cin = new HttpMessages.Reader(client.getInputStream());
            OutputStream cout = client.getOutputStream();
            HttpMessages.Reader uin = null;
            OutputStream uout = null;
            while (!closed) {
                HttpMessages.Request req = HttpMessages.readRequest(cin, cout);
                if (req == null) {
                    return; // the client closed between requests
                }
                requestsReceived.incrementAndGet();
                if (down) {
                    refusals.incrementAndGet();
                    Sockets.reset(client);
                    return;
                }
                Decision d = plan.decide();
                if (d.reset()) {
                    resets.incrementAndGet();
                    Sockets.reset(client);
                    return;
                }
                if (d.delayRequest()) {
                    delays.incrementAndGet();
                    Sockets.sleep(plan.requestDelay());
                }
                if (up == null) {
                    try {
                        up = new Socket();
                        if (!register(up)) {
                            return;
                        }
                        up.setTcpNoDelay(true);
                        up.connect(upstream, 10_000);
                    } catch (IOException e) {
                        upstreamFailures.incrementAndGet();
                        Sockets.reset(client);
                        return;
                    }
                    uin = new HttpMessages.Reader(up.getInputStream());
                    uout = up.getOutputStream();
                }
                uout.write(req.bytes());
                uout.flush();
                requestsForwarded.incrementAndGet();
                HttpMessages.Response resp = HttpMessages.readResponse(uin, req);
                if (resp == null) {
                    client.close(); // the upstream closed without answering: so does the "server"
                    return;
                }
                if (d.delayResponse()) {
                    delays.incrementAndGet();
                    Sockets.sleep(plan.responseDelay());
                }
                if (d.dropResponse()) {
                    responsesDropped.incrementAndGet();
                    if (plan.dropMode() == DropMode.RESET) {
                        Sockets.reset(client);
                    } else {
                        client.close();
                    }
                    return;
                }
                cout.write(resp.bytes());
                cout.flush();
                responsesForwarded.incrementAndGet();
                if (resp.switching()) {
                    pipe(client, cin, cout, up, uin, uout);
                    return;
                }
                if (req.close() || resp.close()) {
                    client.close();
                    return;
                }
            }
        } catch (InterruptedException | InterruptedIOException e) {
            // close() or a timeout: fall through to closing
        } catch (IOException | RuntimeException e) {
            Sockets.reset(client); // a side failed mid-message: cut the client hard
        } finally {
            Sockets.closeQuietly(client);
            sockets.remove(client);
            if (up != null) {
                Sockets.closeQuietly(up);
                sockets.remove(up);
            }
        }
    }

    private void pipe(Socket client, HttpMessages.Reader cin, OutputStream cout, Socket up, HttpMessages.Reader uin,
                      OutputStream uout)
        throws IOException {
        threads.execute(() -> {
            try {
                uin.transferTo(cout);
            } catch (IOException ignored) {
                // either side went away
            } finally {
                Sockets.closeQuietly(client);
                Sockets.closeQuietly(up);
            }
        });
        try {
            cin.transferTo(uout);
        } finally {
            Sockets.closeQuietly(client);
            Sockets.closeQuietly(up);
        }
    }

    // ---------------------------------------------------------------- HTTP/1.1 framing

    // ---------------------------------------------------------------- helpers

    /** The counters on one line. */
    public String counters() {
        return "connections=" + connections() + " received=" + requestsReceived() + " forwarded="
            + requestsForwarded() + " answered=" + responsesForwarded() + " dropped=" + responsesDropped()
            + " resets=" + resets() + " delays=" + delays() + " refusals=" + refusals()
            + " upstreamFailures=" + upstreamFailures();
    }
}
