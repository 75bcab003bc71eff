package dev.idempotency.store.tck;

import dev.idempotency.server.store.IdempotencyStore;
import dev.idempotency.server.store.RecordInfo;
import dev.idempotency.server.store.StoreInspection;
import dev.idempotency.testsupport.Http;
import io.micronaut.context.ApplicationContext;
import io.micronaut.runtime.server.EmbeddedServer;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.DisplayName;
import org.junit.jupiter.api.Test;

import java.io.IOException;
import java.net.InetSocketAddress;
import java.net.Socket;
import java.net.URI;
import java.net.http.HttpResponse;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.UUID;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * A rolling restart on the shared store the subclass configures (CONTRACT S11, S12, S15): two
 * instances of one API, the first shut down with Micronaut's graceful shutdown
 * ({@code micronaut.lifecycle.graceful-shutdown.enabled}) while it runs a request. The request
 * finishes during the drain, its lease kept alive meanwhile, its result stored before the instance
 * goes; a retry on the other instance gets 409 while it runs and the replay once it is done, and
 * the operation runs once. A duplicate already waiting on the stopping instance
 * ({@code inFlightWait}) gets the replay too, and a streamed response that is still flowing is
 * stored whole. Without graceful shutdown (Micronaut's default) the same deploy loses the
 * requests' connections and, once the lease nothing renews has ended, runs the operation again:
 * the case the operations guide tells operators to avoid.
 */
public abstract class RollingRestartSuite {

    static final String SPEC = "RollingRestartSuite";

    private final List<EmbeddedServer> started = new ArrayList<>();

    /** @return the properties that select and configure the shared store under test, the same for both instances */
    protected abstract Map<String, Object> storeProperties();

    @AfterEach
    void stopAll() {
        for (EmbeddedServer s : started) {
            RollingRestartApi api = s.getApplicationContext().isRunning()
                ? s.getApplicationContext().getBean(RollingRestartApi.class) : null;
            if (api != null) {
                api.gate.countDown();
            }
            s.getApplicationContext().close();
        }
        started.clear();
    }

    /** Starts an instance named {@code instance} on {@code storeProperties}, with graceful shutdown on or off. */
    static EmbeddedServer start(Map<String, Object> storeProperties, String instance, boolean graceful) {
        Map<String, Object> properties = new HashMap<>(storeProperties);
        properties.put("spec.name", SPEC);
        properties.put("rolling-restart.instance", instance);
        properties.put("micronaut.server.port", -1);
        properties.put("micronaut.security.enabled", false);
        properties.put("micronaut.lifecycle.graceful-shutdown.enabled", graceful);
        properties.put("micronaut.lifecycle.graceful-shutdown.grace-period", "30s");
        return ApplicationContext.run(EmbeddedServer.class, properties);
    }

    private EmbeddedServer start(String instance) {
        return start(instance, true);
    }

    private EmbeddedServer start(String instance, boolean graceful) {
        EmbeddedServer server = start(storeProperties(), instance, graceful);
        started.add(server);
        return server;
    }

    static String key() {
        return "\"" + UUID.randomUUID() + "\"";
    }

    /** Holds the next request to {@code path} on {@code server} in its handler; returns once it runs. */
    static CompletableFuture<HttpResponse<byte[]>> startHeld(EmbeddedServer server, String path, String key)
        throws InterruptedException {
        RollingRestartApi api = server.getApplicationContext().getBean(RollingRestartApi.class);
        api.gate = new CountDownLatch(1);
        api.entered = new CountDownLatch(1);
        Http http = new Http(server.getURI());
        CompletableFuture<HttpResponse<byte[]>> held = CompletableFuture.supplyAsync(() -> http.postJson(path, key, "{}"));
        assertThat(api.entered.await(10, TimeUnit.SECONDS)).as("the handler started").isTrue();
        return held;
    }

    /**
     * Begins a graceful shutdown of {@code server} and returns once it takes no new connections
     * (its drain has begun); the returned stage completes when the shutdown is over.
     */
    static CompletableFuture<Void> beginShutdown(EmbeddedServer server) throws InterruptedException {
        URI uri = server.getURI();
        CompletableFuture<Void> stopped = CompletableFuture.runAsync(() -> server.getApplicationContext().stop());
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(10);
        while (accepts(uri)) {
            assertThat(System.nanoTime()).as("the instance stops taking connections").isLessThan(deadline);
            Thread.sleep(20);
        }
        return stopped;
    }

    private static boolean accepts(URI uri) {
        try (Socket s = new Socket()) {
            s.connect(new InetSocketAddress(uri.getHost(), uri.getPort()), 1000);
            return true;
        } catch (IOException e) {
            return false;
        }
    }

    /** @return the id of the record a response of {@link RollingRestartApi} was stored under */
    static String recordId(HttpResponse<byte[]> response) {
        return Http.body(response).replaceAll(".*\"record\":\"([0-9a-f]{64})\".*", "$1");
    }

    /** @return how often the operation of a response of {@link RollingRestartApi} ran, on any instance */
    static int executions(HttpResponse<byte[]> response) {
        return RollingRestartApi.EXECUTIONS.get(recordId(response)).get();
    }

    /** @return the record {@code recordId} as the store of {@code server} holds it */
    static Optional<RecordInfo> record(EmbeddedServer server, String recordId) throws Exception {
        IdempotencyStore store = server.getApplicationContext().getBean(IdempotencyStore.class);
        assertThat(store).as("the store offers inspection").isInstanceOf(StoreInspection.class);
        return ((StoreInspection) store).find(recordId).toCompletableFuture().get(10, TimeUnit.SECONDS);
    }

    @Test
    @DisplayName("S12: a request running when its instance shuts down gracefully finishes, its lease kept alive"
        + " through the drain and its result stored; the other instance answers 409, then the replay")
    void drainFinishesTheRequest() throws Exception {
        EmbeddedServer stopping = start("a");
        EmbeddedServer next = start("b");
        Http other = new Http(next.getURI());
        String k = key();
        CompletableFuture<HttpResponse<byte[]>> original = startHeld(stopping, "/rr/orders", k);
        CompletableFuture<Void> stopped = beginShutdown(stopping);

        Thread.sleep(2_500); // two and a half leases into the drain: without renewals the key would be free
        HttpResponse<byte[]> duplicate = other.postJson("/rr/orders", k, "{}");
        assertThat(duplicate.statusCode()).as("the original still holds its key").isEqualTo(409);
        assertThat(stopped).as("the shutdown waits for the request").isNotDone();

        stopping.getApplicationContext().getBean(RollingRestartApi.class).gate.countDown();
        HttpResponse<byte[]> done = original.get(10, TimeUnit.SECONDS);
        assertThat(done.statusCode()).isEqualTo(200);
        assertThat(Http.body(done)).contains("\"instance\":\"a\"");
        stopped.get(30, TimeUnit.SECONDS);

        HttpResponse<byte[]> replay = other.postJson("/rr/orders", k, "{}");
        assertThat(replay.statusCode()).isEqualTo(200);
        assertThat(replay.headers().firstValue("Idempotent-Replayed")).hasValue("true");
        assertThat(replay.body()).isEqualTo(done.body());
        assertThat(executions(done)).isEqualTo(1);
        assertThat(record(next, recordId(done))).hasValueSatisfying(r -> {
            assertThat(r.state()).isEqualTo(RecordInfo.State.COMPLETED);
            assertThat(r.status()).isEqualTo(200);
        });
    }

    @Test
    @DisplayName("S11: a duplicate waiting for its original (inFlightWait) when their instance shuts down"
        + " gracefully gets the original's replay")
    void waitingDuplicateReplays() throws Exception {
        EmbeddedServer stopping = start("a");
        Http http = new Http(stopping.getURI());
        String k = key();
        CompletableFuture<HttpResponse<byte[]>> original = startHeld(stopping, "/rr/orders-waiting", k);
        CompletableFuture<HttpResponse<byte[]>> waiting =
            CompletableFuture.supplyAsync(() -> http.postJson("/rr/orders-waiting", k, "{}"));
        Thread.sleep(300); // the duplicate reaches its wait; nothing is timed
        CompletableFuture<Void> stopped = beginShutdown(stopping);
        Thread.sleep(300);
        assertThat(waiting).as("the duplicate still waits").isNotDone();

        stopping.getApplicationContext().getBean(RollingRestartApi.class).gate.countDown();
        HttpResponse<byte[]> done = original.get(10, TimeUnit.SECONDS);
        HttpResponse<byte[]> replay = waiting.get(10, TimeUnit.SECONDS);
        assertThat(done.statusCode()).isEqualTo(200);
        assertThat(replay.statusCode()).isEqualTo(200);
        assertThat(replay.headers().firstValue("Idempotent-Replayed")).hasValue("true");
        assertThat(replay.body()).isEqualTo(done.body());
        assertThat(executions(done)).isEqualTo(1);
        stopped.get(30, TimeUnit.SECONDS);
    }

    @Test
    @DisplayName("S15: a streamed response still flowing when its instance shuts down gracefully is sent whole"
        + " and stored whole; the other instance replays it byte for byte")
    void streamFinishesTheDrain() throws Exception {
        EmbeddedServer stopping = start("a");
        EmbeddedServer next = start("b");
        String k = key();
        CompletableFuture<HttpResponse<byte[]>> original = startHeld(stopping, "/rr/events", k);
        CompletableFuture<Void> stopped = beginShutdown(stopping);
        Thread.sleep(1_500); // past the lease, the stream still open

        stopping.getApplicationContext().getBean(RollingRestartApi.class).gate.countDown();
        HttpResponse<byte[]> done = original.get(10, TimeUnit.SECONDS);
        assertThat(done.statusCode()).isEqualTo(200);
        assertThat(Http.body(done)).contains("event 0 of 1", "event 2 of 1 on a");
        stopped.get(30, TimeUnit.SECONDS);

        HttpResponse<byte[]> replay = new Http(next.getURI()).postJson("/rr/events", k, "{}");
        assertThat(replay.headers().firstValue("Idempotent-Replayed")).hasValue("true");
        assertThat(replay.body()).isEqualTo(done.body());
    }

    @Test
    @DisplayName("S12: without graceful shutdown, a stopping instance's requests lose their connections, a waiting"
        + " duplicate's too, and a retry on the other instance runs the operation again (the run-twice case)")
    void withoutDrainTheOperationRunsAgain() throws Exception {
        EmbeddedServer stopping = start("a", false);
        EmbeddedServer next = start("b");
        Http http = new Http(stopping.getURI());
        String k = key();
        CompletableFuture<HttpResponse<byte[]>> original = startHeld(stopping, "/rr/orders-waiting", k);
        CompletableFuture<HttpResponse<byte[]>> waiting =
            CompletableFuture.supplyAsync(() -> http.postJson("/rr/orders-waiting", k, "{}"));
        Thread.sleep(300); // the duplicate reaches its wait; nothing is timed
        RollingRestartApi api = stopping.getApplicationContext().getBean(RollingRestartApi.class);
        stopping.getApplicationContext().stop();
        try {
            assertThat(original).failsWithin(10, TimeUnit.SECONDS);
            assertThat(waiting).failsWithin(10, TimeUnit.SECONDS);
            // the record stays in progress until its lease, renewed by nothing now, ends: the retry
            // waits for that (inFlightWait), then takes it over
            HttpResponse<byte[]> retry = new Http(next.getURI()).postJson("/rr/orders-waiting", k, "{}");
            assertThat(retry.statusCode()).isEqualTo(200);
            assertThat(Http.body(retry)).contains("\"instance\":\"b\"");
            assertThat(executions(retry)).as("ran on both instances").isEqualTo(2);
        } finally {
            api.gate.countDown(); // the stopped instance's handler thread, still waiting
        }
    }
}
