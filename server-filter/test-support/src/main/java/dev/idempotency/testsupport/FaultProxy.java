package dev.idempotency.testsupport;

import java.io.ByteArrayOutputStream;
import java.io.EOFException;
import java.io.IOException;
import java.io.InputStream;
import java.io.InterruptedIOException;
import java.io.OutputStream;
import java.io.UncheckedIOException;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.net.SocketException;
import java.net.UnknownHostException;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Deque;
import java.util.List;
import java.util.Locale;
import java.util.Objects;
import java.util.Random;
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
 * listens on {@code 127.0.0.1} (a free port unless {@link Builder#port(int)} gives one) and
 * forwards to an upstream on a loopback address; {@link Builder#upstream(InetSocketAddress)}
 * rejects any other address with an {@link IllegalArgumentException}, and nothing here resolves a
 * host name.
 *
 * <h2>Forwarding</h2>
 * Each accepted client connection gets its own upstream connection (1:1, opened when the first
 * request is forwarded, closed with the client connection). The proxy reads one <em>whole</em>
 * request from the client (head up to the blank line, then a {@code Content-Length} body or a
 * chunked body through the last chunk and trailers; a request with neither has no body), draws the
 * faults for it, writes its bytes unchanged to the upstream, reads the upstream's whole response
 * (interim 1xx responses, then the final one: no body for HEAD, 204, 304; else chunked,
 * {@code Content-Length}, or up to the upstream's close) and writes those bytes unchanged to the
 * client. Then it waits for the next request on the same connection (keep-alive; a pipelined
 * request simply waits in the buffer). Request and response bytes are never altered, with two
 * exceptions: for a request with {@code Expect: 100-continue} and a body the proxy itself writes
 * {@code HTTP/1.1 100 Continue\r\n\r\n} to the client before reading the body, and drops the
 * upstream's own {@code 100} interim responses to that request, so the client sees exactly one.
 * The connection is closed after a response when the request or response says
 * {@code Connection: close}, when either is HTTP/1.0 without {@code keep-alive}, or when the
 * response body ends at the upstream's close. A {@code 101 Switching Protocols} response turns the
 * connection into a raw two-way pipe (no more faults on it). When the upstream closes before
 * answering, the client connection is closed (FIN), as the server itself would have; when the
 * upstream cannot be reached or a side fails mid-message, the client connection is reset. No TLS,
 * no HTTP/2.
 *
 * <h2>Faults, at the byte level</h2>
 * <ul>
 *   <li><b>reset</b> ({@link Builder#resetProbability}): after the whole request has been read
 *   from the client, and before a single byte of it is written upstream, the client socket is
 *   closed with {@code SO_LINGER 0}, so the kernel sends a TCP RST instead of a FIN. The client
 *   reads "connection reset" (or its write fails); the upstream never sees the request.</li>
 *   <li><b>delay</b> ({@link Builder#delay}): after the request has been read, the proxy sleeps
 *   for the duration before writing it upstream; no bytes move in either direction meanwhile.
 *   <b>response delay</b> ({@link Builder#responseDelay}): the upstream's whole response has been
 *   read (the server has done the work), and the proxy sleeps before writing it to the client.</li>
 *   <li><b>drop response</b> ({@link Builder#dropResponseProbability}): the request is written
 *   upstream, the upstream's whole response is read (so the upstream has handled the request and
 *   answered), and then the client connection is ended <em>without a single byte of that
 *   response</em>: closed with a FIN ({@link DropMode#CLOSE}, the default; the client reads end of
 *   stream) or with a RST ({@link DropMode#RESET}). The upstream connection is closed too. This is
 *   the "the server did it, the client never learned" case idempotency keys exist for.</li>
 *   <li><b>refuse</b> ({@link Builder#refuseProbability}): decided per accepted connection; the
 *   connection is accepted and immediately closed with {@code SO_LINGER 0} (RST) before any byte
 *   is read. The client sees a reset (or end of stream) on its first read or write. (The JDK
 *   {@code HttpClient} reports this as a {@code ConnectException} and retries the connection once
 *   by itself, so one call can show up as two refused connections.)</li>
 *   <li><b>down</b> ({@link #setDown(boolean)}, also {@link Builder#down(boolean)}): the listening
 *   socket is closed, so a new connection is refused by the kernel ({@code ConnectException:
 *   Connection refused}, exactly like a server that is not running); on an already open
 *   connection the next request is read and answered with a RST without being forwarded (counted
 *   as a refusal). In-flight exchanges finish. {@code setDown(false)} listens again on the same
 *   port.</li>
 * </ul>
 * Per request the faults are tried in this order: reset (then nothing else happens), request
 * delay, response delay, drop. A request can be both delayed and dropped.
 *
 * <h2>Determinism</h2>
 * Request faults come from one {@link Random} seeded with {@link #seed()}, connection refusals
 * from a second one seeded from it. Every request draws exactly four numbers (reset, request
 * delay, response delay, drop) in the order the requests arrive, whatever the probabilities, so
 * the same seed gives the same {@link #decisions()} for the same sequence of requests (requests
 * sent one at a time; concurrent requests arrive in an order the proxy does not control).
 * {@link #failNext(Fault...)} scripts the faults of the next requests instead; they still draw
 * their four numbers, so the random sequence after them is unchanged.
 *
 * <h2>Threads</h2>
 * A daemon thread accepts, one daemon thread serves each connection (plus one more for a
 * {@code 101} pipe). {@link #close()} closes the listener and every socket, interrupts delays and
 * waits for the threads to end.
 */
public final class FaultProxy implements AutoCloseable {

    /** How {@link Builder#dropResponseProbability dropped responses} end the client connection. */
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
        /** Hold the request for the configured {@link Builder#delay request delay} (zero if none). */
        DELAY_REQUEST,
        /** Hold the response for the configured {@link Builder#responseDelay response delay}. */
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

    private static final InetAddress BIND = loopbackV4();
    private static final int MAX_HEAD = 64 * 1024;
    private static final int MAX_LOG = 10_000;
    private static final byte[] CONTINUE = "HTTP/1.1 100 Continue\r\n\r\n".getBytes(StandardCharsets.ISO_8859_1);
    private static final AtomicInteger INSTANCES = new AtomicInteger();

    private final InetSocketAddress upstream;
    private final int requestedPort;
    private final long seed;
    private final double dropProbability;
    private final DropMode dropMode;
    private final double resetProbability;
    private final Duration requestDelay;
    private final double requestDelayProbability;
    private final Duration responseDelay;
    private final double responseDelayProbability;
    private final double refuseProbability;

    private final Random requestRandom;
    private final Random connectionRandom;
    private final Deque<Fault> scripted = new ArrayDeque<>();
    private final Deque<Decision> log = new ArrayDeque<>();
    private long nextRequestIndex;

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

    private FaultProxy(Builder b) {
        this.upstream = b.upstream;
        this.requestedPort = b.port;
        this.seed = b.seed != null ? b.seed : System.nanoTime();
        this.dropProbability = b.dropProbability;
        this.dropMode = b.dropMode;
        this.resetProbability = b.resetProbability;
        this.requestDelay = b.requestDelay;
        this.requestDelayProbability = b.requestDelayProbability;
        this.responseDelay = b.responseDelay;
        this.responseDelayProbability = b.responseDelayProbability;
        this.refuseProbability = b.refuseProbability;
        this.down = b.down;
        this.requestRandom = new Random(seed);
        this.connectionRandom = new Random(seed ^ 0x5DEECE66DL);
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

    public static Builder builder() {
        return new Builder();
    }

    /**
     * Binds {@code 127.0.0.1} (the configured port, else a free one) and starts accepting; when
     * built {@linkplain Builder#down(boolean) down} it binds to learn the port, then stops
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
                closeQuietly(ss);
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
        return seed;
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
                    closeQuietly(ss);
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
        synchronized (requestRandom) {
            for (Fault f : faults) {
                scripted.add(Objects.requireNonNull(f, "fault"));
            }
        }
    }

    /** The decisions so far (the latest 10,000), in arrival order. */
    public List<Decision> decisions() {
        synchronized (requestRandom) {
            return List.copyOf(log);
        }
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
                closeQuietly(ss);
            }
        }
        for (Socket s : sockets) {
            closeQuietly(s);
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
            + upstream.getPort() + ", seed=" + seed + ", down=" + down + "]";
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
                closeQuietly(ss);
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
            synchronized (connectionRandom) {
                refuse = connectionRandom.nextDouble() < refuseProbability;
            }
            if (refuse) {
                refusals.incrementAndGet();
                reset(client);
                continue;
            }
            if (!register(client)) {
                return;
            }
            try {
                threads.execute(() -> serve(client));
            } catch (RuntimeException rejected) { // shut down meanwhile
                closeQuietly(client);
                return;
            }
        }
    }

    private boolean register(Socket s) {
        sockets.add(s);
        if (closed) {
            sockets.remove(s);
            closeQuietly(s);
            return false;
        }
        return true;
    }

    // ---------------------------------------------------------------- serving one connection

    private void serve(Socket client) {
        Socket up = null;
        try {
            client.setTcpNoDelay(true);
            Reader cin = new Reader(client.getInputStream());
            OutputStream cout = client.getOutputStream();
            Reader uin = null;
            OutputStream uout = null;
            while (!closed) {
                Request req = readRequest(cin, cout);
                if (req == null) {
                    return; // the client closed between requests
                }
                requestsReceived.incrementAndGet();
                if (down) {
                    refusals.incrementAndGet();
                    reset(client);
                    return;
                }
                Decision d = decide();
                if (d.reset()) {
                    resets.incrementAndGet();
                    reset(client);
                    return;
                }
                if (d.delayRequest()) {
                    delays.incrementAndGet();
                    sleep(requestDelay);
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
                        reset(client);
                        return;
                    }
                    uin = new Reader(up.getInputStream());
                    uout = up.getOutputStream();
                }
                uout.write(req.bytes);
                uout.flush();
                requestsForwarded.incrementAndGet();
                Response resp = readResponse(uin, req);
                if (resp == null) {
                    client.close(); // the upstream closed without answering: so does the "server"
                    return;
                }
                if (d.delayResponse()) {
                    delays.incrementAndGet();
                    sleep(responseDelay);
                }
                if (d.dropResponse()) {
                    responsesDropped.incrementAndGet();
                    if (dropMode == DropMode.RESET) {
                        reset(client);
                    } else {
                        client.close();
                    }
                    return;
                }
                cout.write(resp.bytes);
                cout.flush();
                responsesForwarded.incrementAndGet();
                if (resp.switching) {
                    pipe(client, cin, cout, up, uin, uout);
                    return;
                }
                if (req.close || resp.close) {
                    client.close();
                    return;
                }
            }
        } catch (InterruptedException | InterruptedIOException e) {
            // close() or a timeout: fall through to closing
        } catch (IOException | RuntimeException e) {
            reset(client); // a side failed mid-message: cut the client hard
        } finally {
            closeQuietly(client);
            sockets.remove(client);
            if (up != null) {
                closeQuietly(up);
                sockets.remove(up);
            }
        }
    }

    private Decision decide() {
        synchronized (requestRandom) {
            double r = requestRandom.nextDouble();
            double dq = requestRandom.nextDouble();
            double ds = requestRandom.nextDouble();
            double dr = requestRandom.nextDouble();
            Fault f = scripted.poll();
            Decision d;
            long index = nextRequestIndex++;
            if (f != null) {
                d = new Decision(index, f == Fault.RESET, f == Fault.DELAY_REQUEST, f == Fault.DELAY_RESPONSE,
                    f == Fault.DROP_RESPONSE);
            } else {
                boolean reset = r < resetProbability;
                d = new Decision(index, reset, !reset && dq < requestDelayProbability,
                    !reset && ds < responseDelayProbability, !reset && dr < dropProbability);
            }
            if (log.size() == MAX_LOG) {
                log.removeFirst();
            }
            log.addLast(d);
            return d;
        }
    }

    private void pipe(Socket client, Reader cin, OutputStream cout, Socket up, Reader uin, OutputStream uout)
        throws IOException {
        threads.execute(() -> {
            try {
                uin.transferTo(cout);
            } catch (IOException ignored) {
                // either side went away
            } finally {
                closeQuietly(client);
                closeQuietly(up);
            }
        });
        try {
            cin.transferTo(uout);
        } finally {
            closeQuietly(client);
            closeQuietly(up);
        }
    }

    // ---------------------------------------------------------------- HTTP/1.1 framing

    private record Request(byte[] bytes, String method, boolean close, boolean continueSent) {
    }

    private record Response(byte[] bytes, boolean close, boolean switching) {
    }

    /** One whole request, or null on end of stream before its first byte. */
    private static Request readRequest(Reader in, OutputStream clientOut) throws IOException {
        ByteArrayOutputStream raw = new ByteArrayOutputStream();
        Head head = in.readHead(raw);
        if (head == null) {
            return null;
        }
        String[] start = head.startLine.split(" ", 3);
        if (start.length < 3) {
            throw new IOException("bad request line: " + head.startLine);
        }
        String method = start[0];
        String version = start[2].trim();
        boolean chunked = false;
        long length = 0;
        String te = head.value("transfer-encoding");
        if (te != null) {
            if (!lastToken(te).equals("chunked")) {
                throw new IOException("request transfer-encoding without chunked: " + te);
            }
            chunked = true;
        } else {
            length = contentLength(head);
        }
        boolean continueSent = false;
        String expect = head.value("expect");
        if (expect != null && expect.trim().equalsIgnoreCase("100-continue") && (chunked || length > 0)
            && version.equals("HTTP/1.1")) {
            clientOut.write(CONTINUE);
            clientOut.flush();
            continueSent = true;
        }
        if (chunked) {
            in.copyChunked(raw);
        } else {
            in.copy(length, raw);
        }
        return new Request(raw.toByteArray(), method, wantsClose(head, version), continueSent);
    }

    /** The interim responses and the final one, or null on end of stream before its first byte. */
    private static Response readResponse(Reader in, Request req) throws IOException {
        ByteArrayOutputStream raw = new ByteArrayOutputStream();
        while (true) {
            int mark = raw.size();
            Head head = in.readHead(raw);
            if (head == null) {
                if (raw.size() == 0) {
                    return null;
                }
                throw new EOFException("upstream closed after an interim response");
            }
            String[] start = head.startLine.split(" ", 3);
            if (start.length < 2 || start[1].length() != 3) {
                throw new IOException("bad status line: " + head.startLine);
            }
            String version = start[0];
            int status;
            try {
                status = Integer.parseInt(start[1]);
            } catch (NumberFormatException e) {
                throw new IOException("bad status line: " + head.startLine);
            }
            if (status == 101) {
                return new Response(raw.toByteArray(), false, true);
            }
            if (status >= 100 && status < 200) {
                if (status == 100 && req.continueSent) {
                    byte[] kept = Arrays.copyOf(raw.toByteArray(), mark); // the client had ours
                    raw.reset();
                    raw.write(kept);
                }
                continue;
            }
            boolean close = wantsClose(head, version);
            if (req.method.equals("HEAD") || status == 204 || status == 304) {
                return new Response(raw.toByteArray(), close, false);
            }
            String te = head.value("transfer-encoding");
            if (te != null) {
                if (lastToken(te).equals("chunked")) {
                    in.copyChunked(raw);
                } else {
                    in.copyToEnd(raw);
                    close = true;
                }
            } else if (head.value("content-length") != null) {
                in.copy(contentLength(head), raw);
            } else {
                in.copyToEnd(raw);
                close = true;
            }
            return new Response(raw.toByteArray(), close, false);
        }
    }

    private static boolean wantsClose(Head head, String version) {
        String connection = head.value("connection");
        List<String> tokens = connection == null ? List.of() : tokens(connection);
        if (tokens.contains("close")) {
            return true;
        }
        return version.equals("HTTP/1.0") && !tokens.contains("keep-alive");
    }

    private static long contentLength(Head head) throws IOException {
        String cl = head.value("content-length");
        if (cl == null) {
            return 0;
        }
        long n = -1;
        for (String v : cl.split(",")) { // repeated identical values are allowed
            try {
                long x = Long.parseLong(v.trim());
                if (x < 0 || (n >= 0 && x != n)) {
                    throw new IOException("bad content-length: " + cl);
                }
                n = x;
            } catch (NumberFormatException e) {
                throw new IOException("bad content-length: " + cl);
            }
        }
        return n;
    }

    private static String lastToken(String list) {
        List<String> t = tokens(list);
        return t.isEmpty() ? "" : t.get(t.size() - 1);
    }

    private static List<String> tokens(String list) {
        List<String> out = new ArrayList<>();
        for (String s : list.split(",")) {
            String t = s.trim().toLowerCase(Locale.ROOT);
            if (!t.isEmpty()) {
                out.add(t);
            }
        }
        return out;
    }

    /** A message head: start line and header fields (names lower-cased, repeated ones joined). */
    private static final class Head {
        final String startLine;
        final List<String[]> fields = new ArrayList<>();

        Head(String text) throws IOException {
            String[] lines = text.split("\n");
            this.startLine = stripCr(lines[0]);
            for (int i = 1; i < lines.length; i++) {
                String line = stripCr(lines[i]);
                if (line.isEmpty()) {
                    continue;
                }
                int colon = line.indexOf(':');
                if (colon <= 0) {
                    throw new IOException("bad header line: " + line);
                }
                fields.add(new String[] {line.substring(0, colon).trim().toLowerCase(Locale.ROOT),
                    line.substring(colon + 1).trim()});
            }
        }

        String value(String name) {
            String v = null;
            for (String[] f : fields) {
                if (f[0].equals(name)) {
                    v = v == null ? f[1] : v + ", " + f[1];
                }
            }
            return v;
        }

        private static String stripCr(String s) {
            return s.endsWith("\r") ? s.substring(0, s.length() - 1) : s;
        }
    }

    /** A buffered input that copies every byte it consumes, verbatim, to a sink. */
    private static final class Reader {
        private final InputStream in;
        private final byte[] buf = new byte[16 * 1024];
        private int pos;
        private int lim;

        Reader(InputStream in) {
            this.in = in;
        }

        private boolean fill() throws IOException {
            if (pos < lim) {
                return true;
            }
            int n = in.read(buf);
            if (n < 0) {
                return false;
            }
            pos = 0;
            lim = n;
            return true;
        }

        private int read() throws IOException {
            return fill() ? buf[pos++] & 0xff : -1;
        }

        /** Up to and including the blank line; null on end of stream before the first byte. */
        Head readHead(ByteArrayOutputStream sink) throws IOException {
            ByteArrayOutputStream head = new ByteArrayOutputStream(512);
            int b;
            int newlines = 0; // consecutive line ends, ignoring CR
            while ((b = read()) >= 0) {
                head.write(b);
                if (b == '\n') {
                    if (++newlines == 2) {
                        byte[] bytes = head.toByteArray();
                        sink.write(bytes);
                        return new Head(new String(bytes, StandardCharsets.ISO_8859_1));
                    }
                } else if (b != '\r') {
                    newlines = 0;
                }
                if (head.size() > MAX_HEAD) {
                    throw new IOException("message head over " + MAX_HEAD + " bytes");
                }
            }
            if (head.size() == 0) {
                return null;
            }
            throw new EOFException("end of stream inside a message head");
        }

        String readLine(ByteArrayOutputStream sink) throws IOException {
            ByteArrayOutputStream line = new ByteArrayOutputStream(32);
            int b;
            while ((b = read()) >= 0) {
                sink.write(b);
                if (b == '\n') {
                    String s = line.toString(StandardCharsets.ISO_8859_1);
                    return s.endsWith("\r") ? s.substring(0, s.length() - 1) : s;
                }
                line.write(b);
                if (line.size() > MAX_HEAD) {
                    throw new IOException("line over " + MAX_HEAD + " bytes");
                }
            }
            throw new EOFException("end of stream inside a line");
        }

        void copy(long n, ByteArrayOutputStream sink) throws IOException {
            while (n > 0) {
                if (!fill()) {
                    throw new EOFException("end of stream with " + n + " body bytes missing");
                }
                int k = (int) Math.min(n, lim - pos);
                sink.write(buf, pos, k);
                pos += k;
                n -= k;
            }
        }

        /** Chunks, the last chunk and the trailer section, through its blank line. */
        void copyChunked(ByteArrayOutputStream sink) throws IOException {
            while (true) {
                String line = readLine(sink);
                int semi = line.indexOf(';');
                String hex = (semi >= 0 ? line.substring(0, semi) : line).trim();
                long size;
                try {
                    size = Long.parseLong(hex, 16);
                } catch (NumberFormatException e) {
                    throw new IOException("bad chunk size line: " + line);
                }
                if (size < 0) {
                    throw new IOException("bad chunk size line: " + line);
                }
                if (size == 0) {
                    while (!readLine(sink).isEmpty()) {
                        // trailer field, copied
                    }
                    return;
                }
                copy(size, sink);
                if (!readLine(sink).isEmpty()) {
                    throw new IOException("chunk data not followed by CRLF");
                }
            }
        }

        void copyToEnd(ByteArrayOutputStream sink) throws IOException {
            while (fill()) {
                sink.write(buf, pos, lim - pos);
                pos = lim;
            }
        }

        void transferTo(OutputStream out) throws IOException {
            while (fill()) {
                out.write(buf, pos, lim - pos);
                out.flush();
                pos = lim;
            }
        }
    }

    // ---------------------------------------------------------------- helpers

    private static void sleep(Duration d) throws InterruptedException {
        if (d != null && !d.isZero()) {
            Thread.sleep(d.toMillis(), (int) (d.toNanosPart() % 1_000_000));
        }
    }

    /** {@code SO_LINGER 0} then close: the kernel answers with RST, not FIN. */
    private static void reset(Socket s) {
        try {
            s.setSoLinger(true, 0);
        } catch (SocketException ignored) {
            // already closed
        }
        closeQuietly(s);
    }

    private static void closeQuietly(AutoCloseable c) {
        try {
            c.close();
        } catch (Exception ignored) {
            // closing anyway
        }
    }

    private static InetAddress loopbackV4() {
        try {
            return InetAddress.getByAddress("127.0.0.1", new byte[] {127, 0, 0, 1});
        } catch (UnknownHostException e) {
            throw new IllegalStateException(e);
        }
    }

    // ---------------------------------------------------------------- command line

    private static final String USAGE = "usage: FaultProxy --upstream PORT [--port PORT] [--seed N]"
        + " [--drop P] [--drop-mode close|reset] [--reset P] [--delay MILLIS P] [--response-delay MILLIS P]"
        + " [--refuse P]";

    /**
     * Runs a proxy from the command line, for demos (only the JDK is needed on the class path):
     * {@code java -cp idempotency-test-support.jar dev.idempotency.testsupport.FaultProxy
     * --upstream 8080 --port 8081 --seed 42 --drop 0.3}. Prints its counters every 10 s and when
     * stopped. Options are those of {@link Builder}; probabilities P in [0, 1].
     */
    public static void main(String[] args) throws InterruptedException {
        FaultProxy proxy;
        try {
            proxy = fromArgs(args).build().start();
        } catch (IllegalArgumentException e) {
            System.err.println(e.getMessage());
            System.exit(2);
            return;
        }
        Runtime.getRuntime().addShutdownHook(new Thread(() -> {
            proxy.close();
            System.out.println(proxy.counters());
        }));
        System.out.println(proxy + " listening on " + proxy.baseUrl());
        while (true) {
            Thread.sleep(10_000);
            System.out.println(proxy.counters());
        }
    }

    /** The counters on one line. */
    public String counters() {
        return "connections=" + connections() + " received=" + requestsReceived() + " forwarded="
            + requestsForwarded() + " answered=" + responsesForwarded() + " dropped=" + responsesDropped()
            + " resets=" + resets() + " delays=" + delays() + " refusals=" + refusals()
            + " upstreamFailures=" + upstreamFailures();
    }

    /** The builder {@link #main} configures (package-private for its test). */
    static Builder fromArgs(String... args) {
        Builder b = builder();
        boolean upstreamSet = false;
        try {
            for (int i = 0; i < args.length; i++) {
                switch (args[i]) {
                    case "--upstream" -> {
                        b.upstream(Integer.parseInt(args[++i]));
                        upstreamSet = true;
                    }
                    case "--port" -> b.port(Integer.parseInt(args[++i]));
                    case "--seed" -> b.seed(Long.parseLong(args[++i]));
                    case "--drop" -> b.dropResponseProbability(Double.parseDouble(args[++i]));
                    case "--drop-mode" -> b.dropMode(DropMode.valueOf(args[++i].toUpperCase(Locale.ROOT)));
                    case "--reset" -> b.resetProbability(Double.parseDouble(args[++i]));
                    case "--delay" -> b.delay(Duration.ofMillis(Long.parseLong(args[++i])), Double.parseDouble(args[++i]));
                    case "--response-delay" ->
                        b.responseDelay(Duration.ofMillis(Long.parseLong(args[++i])), Double.parseDouble(args[++i]));
                    case "--refuse" -> b.refuseProbability(Double.parseDouble(args[++i]));
                    default -> throw new IllegalArgumentException("unknown option " + args[i] + "\n" + USAGE);
                }
            }
        } catch (ArrayIndexOutOfBoundsException | NumberFormatException e) {
            throw new IllegalArgumentException("bad arguments: " + e.getMessage() + "\n" + USAGE, e);
        }
        if (!upstreamSet) {
            throw new IllegalArgumentException("--upstream is required\n" + USAGE);
        }
        return b;
    }

    // ---------------------------------------------------------------- builder

    /** Configuration; every probability is in [0, 1], 0 (never) by default. */
    public static final class Builder {
        private InetSocketAddress upstream;
        private int port;
        private Long seed;
        private double dropProbability;
        private DropMode dropMode = DropMode.CLOSE;
        private double resetProbability;
        private Duration requestDelay = Duration.ZERO;
        private double requestDelayProbability;
        private Duration responseDelay = Duration.ZERO;
        private double responseDelayProbability;
        private double refuseProbability;
        private boolean down;

        private Builder() {
        }

        /** Forward to {@code 127.0.0.1:port}. Required (this or the other overload). */
        public Builder upstream(int port) {
            if (port < 1 || port > 65535) {
                throw new IllegalArgumentException("upstream port must be 1..65535: " + port);
            }
            this.upstream = new InetSocketAddress(BIND, port);
            return this;
        }

        /**
         * Forward to a resolved <b>loopback</b> address ({@code 127.0.0.0/8} or {@code ::1}).
         *
         * @throws IllegalArgumentException for an unresolved or non-loopback address (this proxy
         *     never sends traffic anywhere else)
         */
        public Builder upstream(InetSocketAddress address) {
            Objects.requireNonNull(address, "address");
            if (address.isUnresolved() || address.getAddress() == null) {
                throw new IllegalArgumentException("upstream must be a resolved loopback address: " + address);
            }
            if (!address.getAddress().isLoopbackAddress()) {
                throw new IllegalArgumentException("upstream must be a loopback address, not " + address);
            }
            if (address.getPort() < 1) {
                throw new IllegalArgumentException("upstream port must be 1..65535: " + address);
            }
            this.upstream = address;
            return this;
        }

        /** Listen on this port of 127.0.0.1; 0 (the default) picks a free one. */
        public Builder port(int port) {
            if (port < 0 || port > 65535) {
                throw new IllegalArgumentException("port must be 0..65535: " + port);
            }
            this.port = port;
            return this;
        }

        /** Seed of the fault decisions; without one a seed is picked (see {@link FaultProxy#seed()}). */
        public Builder seed(long seed) {
            this.seed = seed;
            return this;
        }

        /** Chance that a request's response is read from the upstream and then withheld. */
        public Builder dropResponseProbability(double p) {
            this.dropProbability = probability(p);
            return this;
        }

        /** How a dropped response ends the client connection; {@link DropMode#CLOSE} by default. */
        public Builder dropMode(DropMode mode) {
            this.dropMode = Objects.requireNonNull(mode, "mode");
            return this;
        }

        /** Chance that a request is answered with a RST instead of being forwarded. */
        public Builder resetProbability(double p) {
            this.resetProbability = probability(p);
            return this;
        }

        /** Chance that a request is held for {@code delay} before it is forwarded. */
        public Builder delay(Duration delay, double p) {
            this.requestDelay = duration(delay);
            this.requestDelayProbability = probability(p);
            return this;
        }

        /** Chance that a response, already read from the upstream, is held for {@code delay}. */
        public Builder responseDelay(Duration delay, double p) {
            this.responseDelay = duration(delay);
            this.responseDelayProbability = probability(p);
            return this;
        }

        /** Chance that a new connection is accepted and immediately reset. */
        public Builder refuseProbability(double p) {
            this.refuseProbability = probability(p);
            return this;
        }

        /** Start with the "down" switch on (see {@link FaultProxy#setDown(boolean)}). */
        public Builder down(boolean down) {
            this.down = down;
            return this;
        }

        /** @throws IllegalStateException without an upstream */
        public FaultProxy build() {
            if (upstream == null) {
                throw new IllegalStateException("upstream is required");
            }
            return new FaultProxy(this);
        }

        private static double probability(double p) {
            if (!(p >= 0.0 && p <= 1.0)) {
                throw new IllegalArgumentException("probability must be in [0, 1]: " + p);
            }
            return p;
        }

        private static Duration duration(Duration d) {
            Objects.requireNonNull(d, "delay");
            if (d.isNegative()) {
                throw new IllegalArgumentException("delay must not be negative: " + d);
            }
            return d;
        }
    }
}
