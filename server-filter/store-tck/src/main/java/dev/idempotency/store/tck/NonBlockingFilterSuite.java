package dev.idempotency.store.tck;

import dev.idempotency.testsupport.Http;
import io.micronaut.context.ApplicationContext;
import io.micronaut.runtime.server.EmbeddedServer;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.DisplayName;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestInstance;

import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * The filter never blocks an event-loop thread (CONTRACT S17), on the store the subclass
 * configures: every kind of request (new keys from many threads at once, replays, 422, 409, a
 * duplicate waiting for the original, 400 and 413 rejections, released 5xx results and
 * exceptions, reactive, asynchronous and streamed routes) goes through a real Netty server while
 * BlockHound watches ({@link NonBlockingGuard}); after each test no blocking call may have been
 * made on a non-blocking thread. Subclasses must be named {@code *NonBlockingTest}, so the build
 * runs them in a JVM of their own with BlockHound's JVM flag.
 */
@TestInstance(TestInstance.Lifecycle.PER_CLASS)
public abstract class NonBlockingFilterSuite {

    static final String SPEC = "NonBlockingFilterSuite";

    private EmbeddedServer server;
    private NonBlockingApi api;
    private Http http;

    /** @return the properties that select and configure the store under test */
    protected abstract Map<String, Object> storeProperties();

    @BeforeAll
    void start() {
        // OpenTelemetry's context storage reads a file when its class initializes: once per JVM, in
        // Micronaut's tracing filter on the first request's event loop; not the idempotency filter's
        // doing, and nothing a request repeats, so it happens here, before the guard watches
        io.opentelemetry.context.Context.current();
        NonBlockingGuard.install();
        Map<String, Object> properties = new HashMap<>(storeProperties());
        properties.put("spec.name", SPEC);
        properties.put("micronaut.server.port", -1);
        properties.put("micronaut.security.enabled", false);
        properties.put("idempotency.max-request-body-size", 4096);
        server = ApplicationContext.run(EmbeddedServer.class, properties);
        api = server.getApplicationContext().getBean(NonBlockingApi.class);
        http = new Http(server.getURI());
    }

    /** @return the running server, for a subclass's own tests (they run under the same guard) */
    protected final EmbeddedServer server() {
        return server;
    }

    @AfterAll
    void stop() {
        if (server != null) {
            server.close();
        }
    }

    @BeforeEach
    void clear() {
        api.gate = new CountDownLatch(0);
        NonBlockingGuard.clear();
    }

    @AfterEach
    void nothingBlocked() {
        api.gate.countDown();
        List<NonBlockingGuard.Violation> violations = NonBlockingGuard.violations();
        assertThat(violations).as("blocking calls on non-blocking threads:%n%s", NonBlockingGuard.describe(violations))
            .isEmpty();
    }

    private static String key() {
        return "\"" + UUID.randomUUID() + "\"";
    }

    @Test
    @DisplayName("S17: the guard itself sees a blocking call on the event loop (a route that sleeps there)")
    void guardSeesBlocking() {
        assertThat(http.postJson("/nb/blocks-the-event-loop", null, "{}").statusCode()).isEqualTo(200);
        assertThat(NonBlockingGuard.violations()).anySatisfy(v -> {
            assertThat(v.error().getMessage()).contains("java.lang.Thread.sleep");
            assertThat(v.thread()).containsIgnoringCase("eventloop");
        });
        NonBlockingGuard.clear();
    }

    @Test
    @DisplayName("O4/S17: with tracing on, a new key's span says executed and its replay's links to it, and"
        + " neither blocks an event loop")
    void tracedWithoutBlocking() {
        for (String route : List.of("/nb/blocking", "/nb/mono", "/nb/future")) {
            TckTracing.EXPORTER.reset();
            String k = key();
            HttpResponse<byte[]> first = http.postJson(route, k, "{}");
            assertThat(first.statusCode()).isIn(200, 201);
            assertThat(http.postJson(route, k, "{}").headers().firstValue("Idempotent-Replayed")).hasValue("true");
            TckTracing.assertLinked(TckTracing.span("replayed"), TckTracing.span("executed"), "replay-of");
        }
    }

    @Test
    @DisplayName("S17: new keys, replays and 422s from 16 threads at once block no event loop")
    void newKeysReplaysAndMismatches() throws Exception {
        ExecutorService clients = Executors.newFixedThreadPool(16);
        try {
            List<Future<?>> runs = new ArrayList<>();
            for (int t = 0; t < 16; t++) {
                runs.add(clients.submit(() -> {
                    for (int i = 0; i < 15; i++) {
                        String k = key();
                        String route = i % 3 == 0 ? "/nb/blocking" : i % 3 == 1 ? "/nb/mono" : "/nb/future";
                        HttpResponse<byte[]> first = http.postJson(route, k, "{\"i\":" + i + "}");
                        assertThat(first.statusCode()).isIn(200, 201);
                        HttpResponse<byte[]> replay = http.postJson(route, k, "{\"i\":" + i + "}");
                        assertThat(replay.headers().firstValue("Idempotent-Replayed")).hasValue("true");
                        assertThat(replay.body()).isEqualTo(first.body());
                        assertThat(http.postJson(route, k, "{\"i\":-1}").statusCode()).isEqualTo(422);
                    }
                    return null;
                }));
            }
            for (Future<?> run : runs) {
                run.get(120, TimeUnit.SECONDS);
            }
        } finally {
            clients.shutdownNow();
        }
    }

    @Test
    @DisplayName("S4/S7/S17: multipart uploads under new boundaries, keys from a body member and from a webhook's"
        + " header: replayed, refused and answered without blocking")
    void realSenders() {
        for (int i = 0; i < 10; i++) {
            String k = key();
            HttpResponse<byte[]> first = http.post("/nb/upload", k, "multipart/form-data; boundary=a" + i,
                multipart("a" + i, "evidence"));
            HttpResponse<byte[]> retry = http.post("/nb/upload", k, "multipart/form-data; boundary=b" + i,
                multipart("b" + i, "evidence"));
            assertThat(first.statusCode()).isEqualTo(201);
            assertThat(retry.headers().firstValue("Idempotent-Replayed")).hasValue("true");
            assertThat(http.post("/nb/upload", k, "multipart/form-data; boundary=c" + i, multipart("c" + i, "other"))
                .statusCode()).isEqualTo(422);
            assertThat(http.post("/nb/upload", key(), "multipart/form-data; boundary=d" + i,
                "--d\r\nbroken".getBytes(StandardCharsets.ISO_8859_1)).statusCode()).isEqualTo(400);

            String bodyKey = "{\"idempotency_key\":\"" + UUID.randomUUID() + "\",\"n\":" + i + "}";
            assertThat(http.postJson("/nb/body-key", null, bodyKey).statusCode()).isEqualTo(200);
            assertThat(http.postJson("/nb/body-key", null, bodyKey).headers().firstValue("Idempotent-Replayed"))
                .hasValue("true");
            assertThat(http.postJson("/nb/body-key", null, "{\"n\":1}").statusCode()).isEqualTo(400);

            String delivery = "msg_" + UUID.randomUUID();
            assertThat(http.postJson("/nb/webhook", null, "{}", "webhook-id", delivery).statusCode()).isEqualTo(204);
            assertThat(http.postJson("/nb/webhook", null, "{}", "webhook-id", delivery).headers()
                .firstValue("Idempotent-Replayed")).hasValue("true");
        }
    }

    private static byte[] multipart(String boundary, String purpose) {
        return ("--" + boundary + "\r\nContent-Disposition: form-data; name=\"purpose\"\r\n\r\n" + purpose + "\r\n--"
            + boundary + "--\r\n").getBytes(StandardCharsets.ISO_8859_1);
    }

    /**
     * Sends a request to a gated route and returns once its handler runs (it holds the key until
     * {@code api.gate} opens).
     */
    private CompletableFuture<HttpResponse<byte[]>> startHeld(String path, String key) throws InterruptedException {
        api.gate = new CountDownLatch(1);
        api.entered = new CountDownLatch(1);
        CompletableFuture<HttpResponse<byte[]>> held = CompletableFuture.supplyAsync(() -> http.postJson(path, key, "{}"));
        assertThat(api.entered.await(10, TimeUnit.SECONDS)).isTrue();
        return held;
    }

    @Test
    @DisplayName("S11/S17: a duplicate in flight gets 409; one that waits (inFlightWait) holds no thread and replays")
    void inFlight() throws Exception {
        String k = key();
        CompletableFuture<HttpResponse<byte[]>> original = startHeld("/nb/blocking", k);
        HttpResponse<byte[]> duplicate = http.postJson("/nb/blocking", k, "{}");
        assertThat(duplicate.statusCode()).isEqualTo(409);
        assertThat(duplicate.headers().firstValue("Retry-After")).isPresent();
        api.gate.countDown();
        assertThat(original.get(10, TimeUnit.SECONDS).statusCode()).isEqualTo(200);

        String w = key();
        CompletableFuture<HttpResponse<byte[]>> first = startHeld("/nb/wait", w);
        List<CompletableFuture<HttpResponse<byte[]>>> waiting = new ArrayList<>();
        for (int i = 0; i < 8; i++) {
            waiting.add(CompletableFuture.supplyAsync(() -> http.postJson("/nb/wait", w, "{}")));
        }
        Thread.sleep(300); // let the duplicates reach their wait; nothing is timed
        api.gate.countDown();
        HttpResponse<byte[]> done = first.get(10, TimeUnit.SECONDS);
        for (CompletableFuture<HttpResponse<byte[]>> f : waiting) {
            HttpResponse<byte[]> r = f.get(20, TimeUnit.SECONDS);
            assertThat(r.statusCode()).isEqualTo(200);
            assertThat(r.body()).isEqualTo(done.body());
        }
    }

    @Test
    @DisplayName("S12/S17: a handler that outlives its lease is kept alive without blocking (the loop's timer"
        + " registers it, the keeper renews it): a duplicate gets 409, not a takeover")
    void outlivesItsLease() throws Exception {
        String k = key();
        CompletableFuture<HttpResponse<byte[]>> original = startHeld("/nb/long", k);
        Thread.sleep(2_500); // 2.5 leases: without renewals the key would be free by now
        assertThat(http.postJson("/nb/long", k, "{}").statusCode()).isEqualTo(409);
        api.gate.countDown();
        assertThat(original.get(10, TimeUnit.SECONDS).statusCode()).isEqualTo(200);
        assertThat(http.postJson("/nb/long", k, "{}").headers().firstValue("Idempotent-Replayed")).hasValue("true");
    }

    @Test
    @DisplayName("S3/S5/S8/S17: rejections before the store (400 missing, 400 invalid, 413 sized and chunked) block nothing")
    void rejections() {
        assertThat(http.postJson("/nb/blocking", null, "{}").statusCode()).isEqualTo(400);
        assertThat(http.postJson("/nb/blocking", "\"\"", "{}").statusCode()).isEqualTo(400);
        assertThat(http.post("/nb/blocking", key(), "application/json", new byte[5000]).statusCode()).isEqualTo(413);
        assertThat(http.chunkedPost("/nb/blocking", UUID.randomUUID().toString(), new byte[9000]).status())
            .isEqualTo(413);
    }

    @Test
    @DisplayName("S23/S17: durable steps on the event loop: recorded, then resumed by the retry of a released 503, blocking nothing")
    void durableSteps() {
        // in transactional mode (S18) too: the steps are recorded beside the attempt's transaction,
        // off the event loop, and survive its rollback
        int before = api.stepRuns.get();
        for (int i = 0; i < 10; i++) {
            String k = key();
            HttpResponse<byte[]> failed = http.postJson("/nb/steps", k, "{\"i\":" + i + "}");
            assertThat(failed.statusCode()).isEqualTo(503);
            HttpResponse<byte[]> resumed = http.postJson("/nb/steps", k, "{\"i\":" + i + "}");
            assertThat(resumed.statusCode()).isEqualTo(201);
            assertThat(resumed.body()).isEqualTo(failed.body());
        }
        assertThat(api.stepRuns.get() - before).isEqualTo(20);
    }

    /**
     * For stores that keep records in database transactions (call it from a test of the
     * subclass): atomic phases from 8 threads at once, then their replays, block no event loop;
     * each phase ran once.
     */
    protected final void atomicStepsBlockNothing() throws Exception {
        int before = api.stepRuns.get();
        ExecutorService clients = Executors.newFixedThreadPool(8);
        try {
            List<Future<?>> runs = new ArrayList<>();
            for (int t = 0; t < 8; t++) {
                runs.add(clients.submit(() -> {
                    String k = key();
                    HttpResponse<byte[]> first = http.postJson("/nb/atomic-step", k, "{}");
                    assertThat(first.statusCode()).isEqualTo(201);
                    HttpResponse<byte[]> replay = http.postJson("/nb/atomic-step", k, "{}");
                    assertThat(replay.body()).isEqualTo(first.body());
                    return null;
                }));
            }
            for (Future<?> run : runs) {
                run.get(30, TimeUnit.SECONDS);
            }
        } finally {
            clients.shutdownNow();
        }
        assertThat(api.stepRuns.get() - before).isEqualTo(8);
    }

    @Test
    @DisplayName("S14/S17: 5xx results and exceptions release their key without blocking; the retry runs again")
    void releases() {
        String k = key();
        int before = api.executions.get();
        assertThat(http.postJson("/nb/fail", k, "{}").statusCode()).isEqualTo(503);
        assertThat(http.postJson("/nb/fail", k, "{}").statusCode()).isEqualTo(503);
        String e = key();
        assertThat(http.postJson("/nb/throw", e, "{}").statusCode()).isEqualTo(500);
        assertThat(http.postJson("/nb/throw", e, "{}").statusCode()).isEqualTo(500);
        assertThat(api.executions.get()).isEqualTo(before + 4);
    }

    @Test
    @DisplayName("S15/S17: a streamed response is captured as it flows without blocking, and replayed")
    void streams() {
        String k = key();
        HttpResponse<byte[]> first = http.postJson("/nb/stream", k, "{}");
        HttpResponse<byte[]> replay = http.postJson("/nb/stream", k, "{}");
        assertThat(first.statusCode()).isEqualTo(200);
        assertThat(replay.body()).isEqualTo(first.body());
        assertThat(Http.body(first)).contains("event 4 of");
    }
}
