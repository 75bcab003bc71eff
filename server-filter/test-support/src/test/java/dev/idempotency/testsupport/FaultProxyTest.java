package dev.idempotency.testsupport;

import com.sun.net.httpserver.HttpServer;
import dev.idempotency.testsupport.FaultProxy.Decision;
import dev.idempotency.testsupport.FaultProxy.DropMode;
import dev.idempotency.testsupport.FaultProxy.Fault;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

import java.io.ByteArrayInputStream;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.ConnectException;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.net.SocketException;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.Random;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatCode;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

@Timeout(60)
class FaultProxyTest {

    private HttpServer server;
    private ExecutorService serverThreads;
    private final AtomicInteger handled = new AtomicInteger();
    private final List<FaultProxy> proxies = new ArrayList<>();
    private final List<AutoCloseable> closeables = new ArrayList<>();
    private final HttpClient http = HttpClient.newBuilder().version(HttpClient.Version.HTTP_1_1)
        .connectTimeout(Duration.ofSeconds(5)).build();

    /** A JDK HttpServer on loopback: /echo answers the request body (Content-Length), /chunked 300 KB (chunked). */
    @BeforeEach
    void upstream() throws IOException {
        server = HttpServer.create(new InetSocketAddress(InetAddress.getLoopbackAddress(), 0), 50);
        serverThreads = Executors.newCachedThreadPool();
        server.setExecutor(serverThreads);
        server.createContext("/echo", ex -> {
            byte[] body = ex.getRequestBody().readAllBytes();
            handled.incrementAndGet();
            ex.getResponseHeaders().add("Content-Type", "application/octet-stream");
            ex.sendResponseHeaders(200, body.length == 0 ? -1 : body.length);
            ex.getResponseBody().write(body);
            ex.close();
        });
        server.createContext("/chunked", ex -> {
            ex.getRequestBody().readAllBytes();
            handled.incrementAndGet();
            ex.sendResponseHeaders(200, 0); // 0 = chunked
            try (OutputStream out = ex.getResponseBody()) {
                byte[] all = bytes(300_000, 7);
                for (int i = 0; i < all.length; i += 7_001) {
                    out.write(all, i, Math.min(7_001, all.length - i));
                    out.flush();
                }
            }
        });
        server.start();
    }

    @AfterEach
    void stop() throws Exception {
        for (FaultProxy p : proxies) {
            p.close();
        }
        for (AutoCloseable c : closeables) {
            c.close();
        }
        server.stop(0);
        serverThreads.shutdownNow();
    }

    private FaultProxyBuilder proxy() {
        return FaultProxy.builder().upstream(server.getAddress().getPort()).seed(42);
    }

    private FaultProxy started(FaultProxyBuilder b) {
        FaultProxy p = b.build();
        proxies.add(p);
        return p.start();
    }

    private HttpResponse<byte[]> post(FaultProxy p, String path, byte[] body) throws Exception {
        return http.send(HttpRequest.newBuilder(URI.create(p.baseUrl() + path)).timeout(Duration.ofSeconds(20))
            .POST(HttpRequest.BodyPublishers.ofByteArray(body)).build(), HttpResponse.BodyHandlers.ofByteArray());
    }

    // ------------------------------------------------------------------ forwarding

    @Test
    void bodiesAreByteIdenticalThroughTheProxy() throws Exception {
        FaultProxy p = started(proxy());
        byte[] body = bytes(200_000, 1);

        HttpResponse<byte[]> r = post(p, "/echo", body);

        assertThat(r.statusCode()).isEqualTo(200);
        assertThat(r.body()).isEqualTo(body);
        assertThat(handled).hasValue(1);
        assertThat(p.requestsForwarded()).isEqualTo(1);
        assertThat(p.responsesForwarded()).isEqualTo(1);
    }

    @Test
    void chunkedRequestBodyIsForwardedIntact() throws Exception {
        FaultProxy p = started(proxy());
        byte[] body = bytes(150_000, 2);
        HttpRequest req = HttpRequest.newBuilder(URI.create(p.baseUrl() + "/echo"))
            .POST(HttpRequest.BodyPublishers.ofInputStream(() -> new ByteArrayInputStream(body))) // unknown length: chunked
            .build();

        HttpResponse<byte[]> r = http.send(req, HttpResponse.BodyHandlers.ofByteArray());

        assertThat(r.body()).isEqualTo(body);
    }

    @Test
    void chunkedResponseIsForwardedIntact() throws Exception {
        FaultProxy p = started(proxy());

        HttpResponse<byte[]> r = post(p, "/chunked", new byte[0]);

        assertThat(r.headers().firstValue("transfer-encoding")).hasValue("chunked");
        assertThat(r.body()).isEqualTo(bytes(300_000, 7));
    }

    @Test
    void chunkExtensionsAndTrailersPassVerbatimAndTheConnectionStaysUsable() throws Exception {
        String chunked = "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\nTrailer: X-Sum\r\n\r\n"
            + "5;name=value\r\nhello\r\n1a\r\nabcdefghijklmnopqrstuvwxyz\r\n0\r\nX-Sum: 42\r\n\r\n";
        String plain = "HTTP/1.1 200 OK\r\nContent-Length: 3\r\n\r\nabc";
        RawUpstream up = rawUpstream(chunked, plain);
        FaultProxy p = started(FaultProxy.builder().upstream(up.port()));

        try (Socket s = new Socket(InetAddress.getLoopbackAddress(), p.port())) {
            s.setSoTimeout(10_000);
            send(s, "GET /a HTTP/1.1\r\nHost: x\r\n\r\n");
            assertThat(readExactly(s, chunked.length())).isEqualTo(ascii(chunked));
            send(s, "GET /b HTTP/1.1\r\nHost: x\r\n\r\n");
            assertThat(readExactly(s, plain.length())).isEqualTo(ascii(plain));
        }
        assertThat(up.connections).hasValue(1);
        assertThat(p.connections()).isEqualTo(1);
    }

    @Test
    void requestBytesReachTheUpstreamUnchanged() throws Exception {
        RawUpstream up = rawUpstream("HTTP/1.1 201 Created\r\nContent-Length: 0\r\n\r\n");
        FaultProxy p = started(FaultProxy.builder().upstream(up.port()));
        byte[] body = bytes(70_000, 3);
        ByteArrayOutputStream request = new ByteArrayOutputStream();
        request.write(ascii("POST /payments HTTP/1.1\r\nHost: x\r\nIdempotency-Key: \"k-1\"\r\nContent-Length: "
            + body.length + "\r\n\r\n"));
        request.write(body);

        try (Socket s = new Socket(InetAddress.getLoopbackAddress(), p.port())) {
            s.setSoTimeout(10_000);
            s.getOutputStream().write(request.toByteArray());
            readExactly(s, "HTTP/1.1 201 Created\r\nContent-Length: 0\r\n\r\n".length());
        }
        assertThat(up.requests).containsExactly(request.toByteArray());
    }

    @Test
    void keepAliveCarriesSeveralRequestsOnOneConnection() throws Exception {
        FaultProxy p = started(proxy());

        for (int i = 0; i < 5; i++) {
            byte[] body = ("request " + i).getBytes(StandardCharsets.UTF_8);
            assertThat(post(p, "/echo", body).body()).isEqualTo(body);
        }

        assertThat(handled).hasValue(5);
        assertThat(p.connections()).isEqualTo(1);
        assertThat(p.requestsForwarded()).isEqualTo(5);
    }

    @Test
    void headAnd204And304HaveNoBodyAndKeepTheConnection() throws Exception {
        String head = "HTTP/1.1 200 OK\r\nContent-Length: 1000\r\n\r\n";
        String noContent = "HTTP/1.1 204 No Content\r\n\r\n";
        String notModified = "HTTP/1.1 304 Not Modified\r\nContent-Length: 12\r\n\r\n";
        String last = "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok";
        RawUpstream up = rawUpstream(head, noContent, notModified, last);
        FaultProxy p = started(FaultProxy.builder().upstream(up.port()));

        try (Socket s = new Socket(InetAddress.getLoopbackAddress(), p.port())) {
            s.setSoTimeout(10_000);
            send(s, "HEAD / HTTP/1.1\r\nHost: x\r\n\r\n");
            assertThat(readExactly(s, head.length())).isEqualTo(ascii(head));
            send(s, "DELETE /x HTTP/1.1\r\nHost: x\r\n\r\n");
            assertThat(readExactly(s, noContent.length())).isEqualTo(ascii(noContent));
            send(s, "GET /x HTTP/1.1\r\nHost: x\r\nIf-None-Match: \"a\"\r\n\r\n");
            assertThat(readExactly(s, notModified.length())).isEqualTo(ascii(notModified));
            send(s, "GET / HTTP/1.1\r\nHost: x\r\n\r\n");
            assertThat(readExactly(s, last.length())).isEqualTo(ascii(last));
        }
        assertThat(up.connections).hasValue(1);
    }

    @Test
    void aResponseEndingAtTheUpstreamCloseIsForwardedThenTheClientIsClosed() throws Exception {
        String response = "HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\n\r\nuntil the server closes";
        RawUpstream up = rawUpstream(response + RawUpstream.CLOSE);
        FaultProxy p = started(FaultProxy.builder().upstream(up.port()));

        try (Socket s = new Socket(InetAddress.getLoopbackAddress(), p.port())) {
            s.setSoTimeout(10_000);
            send(s, "GET / HTTP/1.1\r\nHost: x\r\n\r\n");
            assertThat(s.getInputStream().readAllBytes()).isEqualTo(ascii(response));
        }
    }

    @Test
    void expectContinueGetsExactlyOneContinue() throws Exception {
        String response = "HTTP/1.1 200 OK\r\nContent-Length: 4\r\n\r\ndone";
        RawUpstream up = rawUpstream("HTTP/1.1 100 Continue\r\n\r\n" + response);
        FaultProxy p = started(FaultProxy.builder().upstream(up.port()));
        String continued = "HTTP/1.1 100 Continue\r\n\r\n";

        try (Socket s = new Socket(InetAddress.getLoopbackAddress(), p.port())) {
            s.setSoTimeout(10_000);
            send(s, "POST / HTTP/1.1\r\nHost: x\r\nExpect: 100-continue\r\nContent-Length: 5\r\n\r\n");
            assertThat(readExactly(s, continued.length())).isEqualTo(ascii(continued));
            send(s, "hello");
            assertThat(readExactly(s, response.length())).isEqualTo(ascii(response));
        }
        assertThat(new String(up.requests.get(0), StandardCharsets.ISO_8859_1)).endsWith("\r\n\r\nhello");
    }

    @Test
    void switchingProtocolsTurnsTheConnectionIntoARawPipe() throws Exception {
        String switched = "HTTP/1.1 101 Switching Protocols\r\nUpgrade: demo\r\nConnection: Upgrade\r\n\r\n";
        RawUpstream up = rawUpstream(switched, "not http at all \u0001\u0002");
        FaultProxy p = started(FaultProxy.builder().upstream(up.port()));

        try (Socket s = new Socket(InetAddress.getLoopbackAddress(), p.port())) {
            s.setSoTimeout(10_000);
            send(s, "GET / HTTP/1.1\r\nHost: x\r\nUpgrade: demo\r\nConnection: Upgrade\r\n\r\n");
            assertThat(readExactly(s, switched.length())).isEqualTo(ascii(switched));
            send(s, "ping\r\n\r\n"); // no request line: the proxy would reset it if it still parsed HTTP
            assertThat(readExactly(s, 18)).isEqualTo(ascii("not http at all \u0001\u0002"));
        }
        assertThat(up.requests.get(1)).isEqualTo(ascii("ping\r\n\r\n"));
        assertThat(p.requestsReceived()).isEqualTo(1);
    }

    @Test
    void commandLineOptionsConfigureTheProxy() {
        FaultProxy p = FaultProxyCli.fromArgs("--upstream", "8080", "--port", "0", "--seed", "7", "--drop", "0.5",
            "--drop-mode", "reset", "--reset", "0.1", "--delay", "250", "0.2", "--response-delay", "100", "0.3",
            "--refuse", "0.05").build();
        assertThat(p.upstream().getPort()).isEqualTo(8080);
        assertThat(p.upstream().getAddress().isLoopbackAddress()).isTrue();
        assertThat(p.seed()).isEqualTo(7);
        assertThatThrownBy(() -> FaultProxyCli.fromArgs("--drop", "0.5")).isInstanceOf(IllegalArgumentException.class)
            .hasMessageContaining("usage");
        assertThatThrownBy(() -> FaultProxyCli.fromArgs("--upstream", "80", "--bogus")).isInstanceOf(IllegalArgumentException.class);
    }

    // ------------------------------------------------------------------ faults

    @Test
    void dropAfterHandledTheUpstreamDidTheWorkButTheClientSeesAClosedConnection() throws Exception {
        FaultProxy p = started(proxy().dropResponseProbability(1.0));

        assertThatThrownBy(() -> post(p, "/echo", ascii("pay 10 EUR"))).isInstanceOf(IOException.class);

        assertThat(handled).hasValue(1);
        assertThat(p.requestsForwarded()).isEqualTo(1);
        assertThat(p.responsesDropped()).isEqualTo(1);
        assertThat(p.responsesForwarded()).isZero();
    }

    @Test
    void dropWithCloseEndsTheStreamBeforeAnyResponseByte() throws Exception {
        FaultProxy p = started(proxy().dropResponseProbability(1.0).dropMode(DropMode.CLOSE));

        try (Socket s = new Socket(InetAddress.getLoopbackAddress(), p.port())) {
            s.setSoTimeout(10_000);
            send(s, "POST /echo HTTP/1.1\r\nHost: x\r\nContent-Length: 3\r\n\r\nabc");
            assertThat(s.getInputStream().read()).isEqualTo(-1);
        }
        assertThat(handled).hasValue(1);
        assertThat(p.responsesDropped()).isEqualTo(1);
    }

    @Test
    void dropWithResetResetsTheConnectionAfterTheUpstreamHandledTheRequest() throws Exception {
        FaultProxy p = started(proxy().dropResponseProbability(1.0).dropMode(DropMode.RESET));

        try (Socket s = new Socket(InetAddress.getLoopbackAddress(), p.port())) {
            s.setSoTimeout(10_000);
            send(s, "POST /echo HTTP/1.1\r\nHost: x\r\nContent-Length: 3\r\n\r\nabc");
            assertThatThrownBy(() -> s.getInputStream().read())
                .isInstanceOf(SocketException.class).hasMessageContaining("reset");
        }
        assertThat(handled).hasValue(1);
        assertThat(p.responsesDropped()).isEqualTo(1);
    }

    @Test
    void resetCutsTheClientBeforeTheRequestReachesTheUpstream() throws Exception {
        FaultProxy p = started(proxy().resetProbability(1.0));

        try (Socket s = new Socket(InetAddress.getLoopbackAddress(), p.port())) {
            s.setSoTimeout(10_000);
            send(s, "POST /echo HTTP/1.1\r\nHost: x\r\nContent-Length: 3\r\n\r\nabc");
            assertThatThrownBy(() -> s.getInputStream().read())
                .isInstanceOf(SocketException.class).hasMessageContaining("reset");
        }
        assertThatThrownBy(() -> post(p, "/echo", ascii("again"))).isInstanceOf(IOException.class);

        assertThat(handled).hasValue(0);
        assertThat(p.resets()).isEqualTo(2);
        assertThat(p.requestsReceived()).isEqualTo(2);
        assertThat(p.requestsForwarded()).isZero();
    }

    @Test
    void requestDelayHoldsTheRequestBeforeTheUpstreamSeesIt() throws Exception {
        Duration delay = Duration.ofMillis(1500);
        FaultProxy p = started(proxy().delay(delay, 1.0));

        long t0 = System.nanoTime();
        CompletableFuture<HttpResponse<byte[]>> f = http.sendAsync(
            HttpRequest.newBuilder(URI.create(p.baseUrl() + "/echo")).POST(HttpRequest.BodyPublishers.ofString("x")).build(),
            HttpResponse.BodyHandlers.ofByteArray());
        Await.until("one delayed connection", () -> p.delays() == 1);

        assertThat(handled).as("held: the upstream has not seen it").hasValue(0);
        assertThat(f).isNotDone();
        assertThat(f.get(20, TimeUnit.SECONDS).body()).isEqualTo(ascii("x"));
        assertThat(Duration.ofNanos(System.nanoTime() - t0)).isGreaterThanOrEqualTo(delay);
        assertThat(handled).hasValue(1);
    }

    @Test
    void responseDelayHoldsAResponseTheUpstreamAlreadyGave() throws Exception {
        FaultProxy p = started(proxy().responseDelay(Duration.ofMillis(1500), 1.0));

        CompletableFuture<HttpResponse<byte[]>> f = http.sendAsync(
            HttpRequest.newBuilder(URI.create(p.baseUrl() + "/echo")).POST(HttpRequest.BodyPublishers.ofString("y")).build(),
            HttpResponse.BodyHandlers.ofByteArray());
        Await.until("one delayed connection", () -> p.delays() == 1);

        assertThat(handled).as("the work is done").hasValue(1);
        assertThat(f).isNotDone();
        assertThat(f.get(20, TimeUnit.SECONDS).body()).isEqualTo(ascii("y"));
        assertThat(p.responsesForwarded()).isEqualTo(1);
    }

    @Test
    void refuseAcceptsAndResetsNewConnections() throws Exception {
        FaultProxy p = started(proxy().refuseProbability(1.0));

        try (Socket s = new Socket(InetAddress.getLoopbackAddress(), p.port())) {
            s.setSoTimeout(10_000);
            Await.until("one refused connection", () -> p.refusals() == 1);
            assertThatThrownBy(() -> {
                send(s, "GET /echo HTTP/1.1\r\nHost: x\r\n\r\n");
                if (s.getInputStream().read() == -1) {
                    throw new IOException("end of stream");
                }
            }).isInstanceOf(IOException.class);
        }
        assertThat(p.connections()).isEqualTo(1);

        // The JDK HttpClient reports the reset as a ConnectException and retries the connect once
        // on its own (so 2 more connections here): every one of them is refused.
        assertThatThrownBy(() -> post(p, "/echo", ascii("z"))).isInstanceOf(IOException.class);
        assertThat(p.connections()).isGreaterThan(1);
        assertThat(p.refusals()).isEqualTo(p.connections());
        assertThat(p.requestsReceived()).isZero();
        assertThat(handled).hasValue(0);
    }

    @Test
    void downRefusesConnectionsAndCanBeSwitchedOffAgainOnTheSamePort() throws Exception {
        FaultProxy p = started(proxy());
        int port = p.port();
        assertThat(post(p, "/echo", ascii("1")).statusCode()).isEqualTo(200);

        p.setDown(true);
        assertThat(p.isDown()).isTrue();
        assertThatThrownBy(() -> new Socket(InetAddress.getLoopbackAddress(), port).close())
            .isInstanceOf(ConnectException.class);
        HttpClient fresh = HttpClient.newBuilder().version(HttpClient.Version.HTTP_1_1).build();
        assertThatThrownBy(() -> fresh.send(HttpRequest.newBuilder(URI.create(p.baseUrl() + "/echo"))
            .POST(HttpRequest.BodyPublishers.ofString("2")).build(), HttpResponse.BodyHandlers.ofByteArray()))
            .isInstanceOf(ConnectException.class);
        // the pooled keep-alive connection of the first request is still open: its next request is reset
        assertThatThrownBy(() -> post(p, "/echo", ascii("2"))).isInstanceOf(IOException.class);
        assertThat(p.refusals()).isEqualTo(1);

        p.setDown(false);
        assertThat(p.port()).isEqualTo(port);
        assertThat(post(p, "/echo", ascii("3")).body()).isEqualTo(ascii("3"));
        assertThat(handled).hasValue(2);
    }

    @Test
    void downResetsTheNextRequestOnAnOpenConnection() throws Exception {
        FaultProxy p = started(proxy());
        try (Socket s = new Socket(InetAddress.getLoopbackAddress(), p.port())) {
            s.setSoTimeout(10_000);
            send(s, "POST /echo HTTP/1.1\r\nHost: x\r\nContent-Length: 2\r\n\r\nok");
            skipHead(s);
            assertThat(readExactly(s, 2)).isEqualTo(ascii("ok"));

            p.setDown(true);
            send(s, "POST /echo HTTP/1.1\r\nHost: x\r\nContent-Length: 2\r\n\r\nno");
            assertThatThrownBy(() -> s.getInputStream().read())
                .isInstanceOf(SocketException.class).hasMessageContaining("reset");
        }
        assertThat(handled).hasValue(1);
        assertThat(p.refusals()).isEqualTo(1);
    }

    @Test
    void builtDownKnowsItsPortButRefuses() throws Exception {
        FaultProxy p = started(proxy().down(true));

        assertThatThrownBy(() -> new Socket(InetAddress.getLoopbackAddress(), p.port()).close())
            .isInstanceOf(ConnectException.class);
        p.setDown(false);
        assertThat(post(p, "/echo", ascii("up")).body()).isEqualTo(ascii("up"));
    }

    @Test
    void anUnreachableUpstreamResetsTheClient() throws Exception {
        int nothing;
        try (ServerSocket ss = new ServerSocket(0, 1, InetAddress.getLoopbackAddress())) {
            nothing = ss.getLocalPort();
        }
        FaultProxy p = started(FaultProxy.builder().upstream(nothing));

        assertThatThrownBy(() -> post(p, "/echo", ascii("x"))).isInstanceOf(IOException.class);
        assertThat(p.upstreamFailures()).isEqualTo(1);
    }

    @Test
    void scriptedFaultsGiveTheClassicLostResponseThenRetry() throws Exception {
        FaultProxy p = started(proxy());
        p.failNext(Fault.DROP_RESPONSE, Fault.NONE);

        assertThatThrownBy(() -> post(p, "/echo", ascii("pay"))).isInstanceOf(IOException.class);
        assertThat(post(p, "/echo", ascii("pay")).body()).isEqualTo(ascii("pay"));

        assertThat(handled).as("the server ran it twice: what an idempotency key prevents").hasValue(2);
        assertThat(p.decisions()).extracting(Decision::dropResponse).containsExactly(true, false);
    }

    // ------------------------------------------------------------------ determinism

    @Test
    void theSameSeedGivesTheSameFaultsForTheSameRequests() throws Exception {
        FaultProxyBuilder config = proxy().seed(42).resetProbability(0.2).dropResponseProbability(0.3)
            .delay(Duration.ofMillis(1), 0.2).responseDelay(Duration.ofMillis(1), 0.2);
        FaultProxy a = started(config);
        List<String> outcomesA = run(a, 40);
        int handledByA = handled.getAndSet(0);
        FaultProxy b = started(config);
        List<String> outcomesB = run(b, 40);
        FaultProxy c = started(config.seed(43));
        run(c, 40);

        assertThat(b.decisions()).isEqualTo(a.decisions());
        assertThat(outcomesB).isEqualTo(outcomesA);
        assertThat(c.decisions()).isNotEqualTo(a.decisions());
        assertThat(outcomesA).contains("ok", "reset", "dropped");
        for (int i = 0; i < 40; i++) {
            Decision d = a.decisions().get(i);
            assertThat(outcomesA.get(i)).isEqualTo(d.reset() ? "reset" : d.dropResponse() ? "dropped" : "ok");
        }
        assertThat(handledByA).isEqualTo(40 - Collections.frequency(outcomesA, "reset"));
        assertThat(a.resets()).isEqualTo(Collections.frequency(outcomesA, "reset"));
        assertThat(a.responsesDropped()).isEqualTo(Collections.frequency(outcomesA, "dropped"));
        assertThat(a.delays()).isEqualTo(a.decisions().stream()
            .mapToLong(d -> (d.delayRequest() ? 1 : 0) + (d.delayResponse() ? 1 : 0)).sum());
    }

    /** {@code n} requests one after another, each on a new raw connection. */
    private static List<String> run(FaultProxy p, int n) throws IOException {
        List<String> outcomes = new ArrayList<>();
        for (int i = 0; i < n; i++) {
            try (Socket s = new Socket(InetAddress.getLoopbackAddress(), p.port())) {
                s.setSoTimeout(10_000);
                send(s, "POST /echo HTTP/1.1\r\nHost: x\r\nContent-Length: 1\r\n\r\nq");
                int first;
                try {
                    first = s.getInputStream().read();
                } catch (SocketException e) {
                    outcomes.add("reset");
                    continue;
                }
                outcomes.add(first == -1 ? "dropped" : "ok");
            }
        }
        return outcomes;
    }

    // ------------------------------------------------------------------ validation and lifecycle

    @Test
    void onlyLoopbackUpstreamsAreAccepted() throws Exception {
        assertThatThrownBy(() -> FaultProxy.builder().upstream(
            new InetSocketAddress(InetAddress.getByAddress(new byte[] {10, 0, 0, 1}), 80)))
            .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("loopback");
        assertThatThrownBy(() -> FaultProxy.builder().upstream(
            new InetSocketAddress(InetAddress.getByAddress(new byte[] {(byte) 192, (byte) 168, 1, 1}), 8080)))
            .isInstanceOf(IllegalArgumentException.class);
        assertThatThrownBy(() -> FaultProxy.builder().upstream(InetSocketAddress.createUnresolved("example.com", 80)))
            .isInstanceOf(IllegalArgumentException.class);
        assertThatCode(() -> FaultProxy.builder().upstream(
            new InetSocketAddress(InetAddress.getByAddress(new byte[] {127, 0, 0, 2}), 80))).doesNotThrowAnyException();
        assertThatCode(() -> FaultProxy.builder().upstream(
            new InetSocketAddress(InetAddress.getByName("::1"), 80))).doesNotThrowAnyException();
        assertThatThrownBy(() -> FaultProxy.builder().upstream(0)).isInstanceOf(IllegalArgumentException.class);
    }

    @Test
    void invalidSettingsAreRejected() {
        assertThatThrownBy(() -> FaultProxy.builder().dropResponseProbability(1.5)).isInstanceOf(IllegalArgumentException.class);
        assertThatThrownBy(() -> FaultProxy.builder().resetProbability(-0.1)).isInstanceOf(IllegalArgumentException.class);
        assertThatThrownBy(() -> FaultProxy.builder().refuseProbability(Double.NaN)).isInstanceOf(IllegalArgumentException.class);
        assertThatThrownBy(() -> FaultProxy.builder().delay(Duration.ofMillis(-1), 0.5)).isInstanceOf(IllegalArgumentException.class);
        assertThatThrownBy(() -> FaultProxy.builder().port(70000)).isInstanceOf(IllegalArgumentException.class);
        assertThatThrownBy(() -> FaultProxy.builder().build()).isInstanceOf(IllegalStateException.class);
        assertThatThrownBy(() -> FaultProxy.builder().upstream(1).build().port()).isInstanceOf(IllegalStateException.class);
    }

    @Test
    void closeStopsListeningClosesConnectionsAndEndsItsThreads() throws Exception {
        FaultProxy p = proxy().build().start();
        int port = p.port();
        Socket idle = new Socket(InetAddress.getLoopbackAddress(), port);
        closeables.add(idle);
        idle.setSoTimeout(10_000);
        send(idle, "POST /echo HTTP/1.1\r\nHost: x\r\nContent-Length: 2\r\n\r\nhi");
        skipHead(idle);
        readExactly(idle, 2);
        assertThat(threads()).isNotEmpty();

        p.close();
        p.close();

        assertThat(threads()).isEmpty();
        assertThat(idle.getInputStream().read()).isEqualTo(-1);
        assertThatThrownBy(() -> new Socket(InetAddress.getLoopbackAddress(), port).close())
            .isInstanceOf(ConnectException.class);
        assertThatThrownBy(p::start).isInstanceOf(IllegalStateException.class);
    }

    private static List<String> threads() {
        List<String> names = new ArrayList<>();
        for (Thread t : Thread.getAllStackTraces().keySet()) {
            if (t.isAlive() && t.getName().startsWith("fault-proxy-")) {
                names.add(t.getName());
            }
        }
        return names;
    }

    // ------------------------------------------------------------------ helpers

    private RawUpstream rawUpstream(String... responses) throws IOException {
        RawUpstream up = new RawUpstream(responses);
        closeables.add(up);
        return up;
    }

    /**
     * A scripted upstream on a raw ServerSocket: reads each request (head, then a Content-Length
     * body), records its bytes, and answers the next scripted response verbatim (closing after one
     * that ends with {@link #CLOSE}).
     */
    static final class RawUpstream implements AutoCloseable {
        static final String CLOSE = "\u0000close";
        final ServerSocket ss = new ServerSocket(0, 50, InetAddress.getLoopbackAddress());
        final BlockingQueue<String> script = new LinkedBlockingQueue<>();
        final List<byte[]> requests = Collections.synchronizedList(new ArrayList<>());
        final AtomicInteger connections = new AtomicInteger();
        final ExecutorService pool = Executors.newCachedThreadPool();

        RawUpstream(String... responses) throws IOException {
            script.addAll(List.of(responses));
            pool.execute(() -> {
                while (!ss.isClosed()) {
                    try {
                        Socket s = ss.accept();
                        connections.incrementAndGet();
                        pool.execute(() -> serve(s));
                    } catch (IOException e) {
                        return;
                    }
                }
            });
        }

        int port() {
            return ss.getLocalPort();
        }

        private void serve(Socket s) {
            try (s) {
                InputStream in = s.getInputStream();
                while (true) {
                    ByteArrayOutputStream req = new ByteArrayOutputStream();
                    int b;
                    while ((b = in.read()) >= 0) {
                        req.write(b);
                        if (req.size() >= 4 && new String(req.toByteArray(), req.size() - 4, 4,
                            StandardCharsets.ISO_8859_1).equals("\r\n\r\n")) {
                            break;
                        }
                    }
                    if (b < 0) {
                        return;
                    }
                    String head = req.toString(StandardCharsets.ISO_8859_1).toLowerCase();
                    int at = head.indexOf("content-length:");
                    if (at >= 0) {
                        int n = Integer.parseInt(head.substring(at + 15, head.indexOf('\r', at)).trim());
                        req.write(in.readNBytes(n));
                    }
                    requests.add(req.toByteArray());
                    String response = script.take();
                    boolean close = response.endsWith(CLOSE);
                    s.getOutputStream().write(ascii(close ? response.substring(0, response.length() - CLOSE.length()) : response));
                    s.getOutputStream().flush();
                    if (close) {
                        return;
                    }
                }
            } catch (IOException | InterruptedException e) {
                // test over
            }
        }

        @Override
        public void close() throws Exception {
            ss.close();
            pool.shutdownNow();
        }
    }

    private static void send(Socket s, String text) throws IOException {
        s.getOutputStream().write(ascii(text));
        s.getOutputStream().flush();
    }

    private static byte[] readExactly(Socket s, int n) throws IOException {
        byte[] b = s.getInputStream().readNBytes(n);
        assertThat(b).hasSize(n);
        return b;
    }

    /** Reads and discards a response head, up to and including its blank line. */
    private static void skipHead(Socket s) throws IOException {
        ByteArrayOutputStream head = new ByteArrayOutputStream();
        InputStream in = s.getInputStream();
        while (!head.toString(StandardCharsets.ISO_8859_1).endsWith("\r\n\r\n")) {
            int b = in.read();
            if (b < 0) {
                throw new IOException("end of stream in head");
            }
            head.write(b);
        }
    }

    private static byte[] ascii(String s) {
        return s.getBytes(StandardCharsets.ISO_8859_1);
    }

    private static byte[] bytes(int n, long seed) {
        byte[] b = new byte[n];
        new Random(seed).nextBytes(b);
        return b;
    }

}
