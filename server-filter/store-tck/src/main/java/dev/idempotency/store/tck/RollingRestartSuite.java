package dev.idempotency.store.tck;

import dev.idempotency.server.store.IdempotencyStore;
import dev.idempotency.server.store.RecordInfo;
import dev.idempotency.server.store.StoreInspection;
import dev.idempotency.testsupport.Http;
import io.micronaut.context.ApplicationContext;
import io.micronaut.runtime.server.EmbeddedServer;
import io.opentelemetry.api.common.AttributeKey;
import io.opentelemetry.sdk.trace.data.SpanData;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.DisplayName;
import org.junit.jupiter.api.Test;

import java.io.IOException;
import java.net.InetSocketAddress;
import java.net.Socket;
import java.net.URI;
import java.net.http.HttpResponse;
import java.time.Instant;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.UUID;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.TimeUnit;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * A rolling restart on the shared store the subclass configures (CONTRACT S11, S12, S15, S18):
 * two instances of one API, the first shut down with Micronaut's graceful shutdown
 * ({@code micronaut.lifecycle.graceful-shutdown.enabled}) while it runs a request. The request
 * finishes during the drain, its key held meanwhile (a lease renewed past its first end; in
 * transactional mode, the open transaction's row), its result stored before the instance goes; a
 * retry on the other instance gets 409 while it runs and the replay once it is done, and the
 * operation runs once. A duplicate already waiting on the stopping instance ({@code inFlightWait})
 * gets the replay too, and a streamed response that is still flowing is stored whole. Without
 * graceful shutdown (Micronaut's default) the same deploy cuts the running request's connection,
 * a waiting duplicate is cut off (a closed connection or an error status), and a retry runs the
 * operation again: the case the operations guide tells operators to avoid.
 */
public abstract class RollingRestartSuite {

    static final String SPEC = "RollingRestartSuite";

    /** The test's HTTP callers and stops, on threads of their own (not the common pool). */
    private static final ExecutorService CALLERS = Executors.newCachedThreadPool(r -> {
        Thread t = new Thread(r, "rolling-restart-caller");
        t.setDaemon(true);
        return t;
    });

    private final List<Instance> started = new ArrayList<>();

    /** @return the properties that select and configure the shared store under test, the same for both instances */
    protected abstract Map<String, Object> storeProperties();

    /**
     * @return whether the store runs in transactional mode (S18): no lease there, the key is held
     *     by the open transaction's uncommitted row, which is invisible to inspection
     */
    protected boolean transactional() {
        return false;
    }

    /** A running instance, its routes and a client for it. */
    record Instance(EmbeddedServer server, RollingRestartApi api, Http http) {

        /** @return the store of this instance, as an operator's inspection sees it */
        StoreInspection store() {
            IdempotencyStore store = server.getApplicationContext().getBean(IdempotencyStore.class);
            assertThat(store).as("the store offers inspection").isInstanceOf(StoreInspection.class);
            return (StoreInspection) store;
        }
    }

    @AfterEach
    void stopAll() {
        for (Instance i : started) {
            i.api().gate.countDown(); // a handler a failed test left waiting
            i.server().getApplicationContext().close();
        }
        started.clear();
    }

    /** Starts an instance named {@code instance} on {@code storeProperties}, with graceful shutdown on or off. */
    static Instance startInstance(Map<String, Object> storeProperties, String instance, boolean graceful) {
        Map<String, Object> properties = new HashMap<>(storeProperties);
        properties.put("spec.name", SPEC);
        properties.put("rolling-restart.instance", instance);
        properties.put("micronaut.server.port", -1);
        properties.put("micronaut.security.enabled", false);
        properties.put("micronaut.lifecycle.graceful-shutdown.enabled", graceful);
        properties.put("micronaut.lifecycle.graceful-shutdown.grace-period", "30s");
        EmbeddedServer server = ApplicationContext.run(EmbeddedServer.class, properties);
        return new Instance(server, server.getApplicationContext().getBean(RollingRestartApi.class),
            new Http(server.getURI()));
    }

    private Instance start(String instance, boolean graceful) {
        Instance i = startInstance(storeProperties(), instance, graceful);
        started.add(i);
        return i;
    }

    static String key() {
        return "\"" + UUID.randomUUID() + "\"";
    }

    /** Holds the next request to {@code path} on {@code instance} in its handler; returns once it runs. */
    static CompletableFuture<HttpResponse<byte[]>> startHeld(Instance instance, String path, String key)
        throws InterruptedException {
        instance.api().gate = new CountDownLatch(1);
        instance.api().entered = new CountDownLatch(1);
        CompletableFuture<HttpResponse<byte[]>> held = post(instance, path, key);
        assertThat(instance.api().entered.await(10, TimeUnit.SECONDS)).as("the handler started").isTrue();
        return held;
    }

    /** Sends a request to {@code path} on {@code instance}; returns once the instance has read it. */
    static CompletableFuture<HttpResponse<byte[]>> startArrived(Instance instance, String path, String key)
        throws InterruptedException {
        instance.api().arrivals = new CountDownLatch(1);
        CompletableFuture<HttpResponse<byte[]>> sent = post(instance, path, key);
        assertThat(instance.api().arrivals.await(10, TimeUnit.SECONDS)).as("the request arrived").isTrue();
        return sent;
    }

    private static CompletableFuture<HttpResponse<byte[]>> post(Instance instance, String path, String key) {
        return CompletableFuture.supplyAsync(() -> instance.http().postJson(path, key, "{}"), CALLERS);
    }

    /**
     * Begins a graceful shutdown of {@code instance} and returns once it takes no new connections
     * (its drain has begun); the returned stage completes when the shutdown is over.
     */
    static CompletableFuture<Void> beginShutdown(Instance instance) throws InterruptedException {
        URI uri = instance.server().getURI();
        CompletableFuture<Void> stopped =
            CompletableFuture.runAsync(() -> instance.server().getApplicationContext().stop(), CALLERS);
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

    /** @return the record {@code recordId} as {@code store} holds it now */
    static Optional<RecordInfo> record(StoreInspection store, String recordId) throws Exception {
        return store.find(recordId).toCompletableFuture().get(10, TimeUnit.SECONDS);
    }

    /**
     * Waits until the in-progress record {@code recordId} has outlived {@code firstDeadline}, the
     * end of the lease it was acquired with, and is still in progress with a later deadline: its
     * holder renewed it.
     */
    static void awaitRenewedPast(StoreInspection store, String recordId, Instant firstDeadline) throws Exception {
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(15);
        while (true) {
            RecordInfo now = record(store, recordId).orElseThrow();
            assertThat(now.state()).as("still held").isEqualTo(RecordInfo.State.IN_PROGRESS);
            if (Instant.now().isAfter(firstDeadline) && now.deadline().isAfter(firstDeadline)) {
                assertThat(now.expired(Instant.now())).as("the renewed lease is live").isFalse();
                return;
            }
            assertThat(System.nanoTime()).as("the lease is renewed past its first end").isLessThan(deadline);
            Thread.sleep(50);
        }
    }

    /**
     * Checks that a request was cut off by a stop without a drain: its connection closed, or an
     * error status (a 503 when its next acquire met the store closing, or a 500 that Micronaut
     * writes when it cannot encode a response any more), never its operation's result.
     */
    static void assertCutOff(CompletableFuture<HttpResponse<byte[]>> request) throws InterruptedException {
        HttpResponse<byte[]> answer;
        try {
            answer = request.get(10, TimeUnit.SECONDS);
        } catch (java.util.concurrent.ExecutionException e) {
            return; // the connection closed
        } catch (java.util.concurrent.TimeoutException e) {
            throw new AssertionError("the request got no answer and kept its connection", e);
        }
        assertThat(answer.statusCode()).as("an error, not the operation's result").isGreaterThanOrEqualTo(500);
        assertThat(answer.headers().firstValue("Idempotent-Replayed")).isEmpty();
    }

    /** @return the id of the record a response of {@link RollingRestartApi} was stored under */
    static String recordId(HttpResponse<byte[]> response) {
        return Http.body(response).replaceAll(".*\"record\":\"([0-9a-f]{64})\".*", "$1");
    }

    /** @return how often the operation of a response of {@link RollingRestartApi} ran, on any instance */
    static int executions(HttpResponse<byte[]> response) {
        return RollingRestartApi.EXECUTIONS.get(recordId(response)).get();
    }

    /** A request held in its handler on an instance whose graceful shutdown has begun. */
    private record Draining(Instance instance, CompletableFuture<HttpResponse<byte[]>> original, String recordId,
                            CompletableFuture<Void> stopped) {

        /** Lets the request finish; @return its response (200), once the shutdown is over too */
        HttpResponse<byte[]> finish() throws Exception {
            instance.api().gate.countDown();
            HttpResponse<byte[]> done = original.get(10, TimeUnit.SECONDS);
            assertThat(done.statusCode()).isEqualTo(200);
            stopped.get(30, TimeUnit.SECONDS);
            return done;
        }
    }

    /**
     * Holds a request to {@code path} on {@code stopping}, begins its graceful shutdown, and returns
     * once the shared store, read through {@code other}, shows the key kept past the lease it was
     * acquired with (in transactional mode, which has no lease, at once: the open transaction holds it).
     */
    /** {@code replay} is the stored answer of {@code done}, byte for byte. */
    private static void assertReplayOf(HttpResponse<byte[]> replay, HttpResponse<byte[]> done) {
        assertThat(replay.statusCode()).isEqualTo(done.statusCode());
        assertThat(replay.headers().firstValue("Idempotent-Replayed")).hasValue("true");
        assertThat(replay.body()).isEqualTo(done.body());
    }

    private Draining drainWhileHeld(Instance stopping, Instance other, String path, String key) throws Exception {
        CompletableFuture<HttpResponse<byte[]>> original = startHeld(stopping, path, key);
        String recordId = stopping.api().lastRecord;
        Instant firstDeadline = transactional() ? null : record(other.store(), recordId).orElseThrow().deadline();
        CompletableFuture<Void> stopped = beginShutdown(stopping);
        if (!transactional()) {
            awaitRenewedPast(other.store(), recordId, firstDeadline);
        }
        return new Draining(stopping, original, recordId, stopped);
    }

    @Test
    @DisplayName("S12/S18: a request running when its instance shuts down gracefully finishes, its key held"
        + " through the drain and its result stored; the other instance answers 409, then the replay")
    void drainFinishesTheRequest() throws Exception {
        Instance stopping = start("a", true);
        Instance next = start("b", true);
        String k = key();
        Draining draining = drainWhileHeld(stopping, next, "/rr/orders", k);
        HttpResponse<byte[]> duplicate = next.http().postJson("/rr/orders", k, "{}");
        assertThat(duplicate.statusCode()).as("the original still holds its key").isEqualTo(409);
        assertThat(duplicate.headers().firstValue("Retry-After")).isPresent();
        assertThat(draining.stopped()).as("the shutdown waits for the request").isNotDone();

        HttpResponse<byte[]> done = draining.finish();
        assertThat(Http.body(done)).contains("\"instance\":\"a\"");

        HttpResponse<byte[]> replay = next.http().postJson("/rr/orders", k, "{}");
        assertReplayOf(replay, done);
        assertThat(executions(done)).isEqualTo(1);
        assertThat(record(next.store(), draining.recordId())).hasValueSatisfying(r -> {
            assertThat(r.state()).isEqualTo(RecordInfo.State.COMPLETED);
            assertThat(r.status()).isEqualTo(200);
        });
    }

    @Test
    @DisplayName("O4: across two instances on the shared store, a 409 on one links to the run in progress on the"
        + " other (leased mode), and the replay to the span that executed the operation")
    void spansLinkAcrossInstances() throws Exception {
        TckTracing.EXPORTER.reset();
        Instance first = start("a", true);
        Instance second = start("b", true);
        String k = key();
        CompletableFuture<HttpResponse<byte[]>> original = startHeld(first, "/rr/orders", k);
        assertThat(second.http().postJson("/rr/orders", k, "{}").statusCode()).isEqualTo(409);
        first.api().gate.countDown();
        HttpResponse<byte[]> done = original.get(10, TimeUnit.SECONDS);
        assertReplayOf(second.http().postJson("/rr/orders", k, "{}"), done);

        SpanData executed = TckTracing.span("executed");
        SpanData replayed = TckTracing.span("replayed");
        SpanData conflict = TckTracing.span("conflict");
        TckTracing.assertLinked(replayed, executed, "replay-of");
        if (transactional()) {
            // the holder's row is uncommitted: the 409 is a lock wait that ran out, with nothing to link to
            assertThat(conflict.getLinks()).isEmpty();
        } else {
            TckTracing.assertLinked(conflict, executed, "in-progress");
        }
        assertThat(executed.getAttributes().get(TckTracing.STORE)).isIn("redis", "postgres")
            .isEqualTo(replayed.getAttributes().get(TckTracing.STORE));
    }

    @Test
    @DisplayName("O4/S23: an operation whose instance is gone (stopped without a drain, as after kill -9) resumes on"
        + " the other: its span says resumed, and its step's span that the charge came from the record")
    void resumedStepSaysSo() throws Exception {
        TckTracing.EXPORTER.reset();
        Instance stopping = start("a", false);
        Instance next = start("b", true);
        String k = key();
        CompletableFuture<HttpResponse<byte[]>> original = startHeld(stopping, "/rr/charges", k);
        stopping.server().getApplicationContext().stop();
        assertThat(original).failsWithin(10, TimeUnit.SECONDS);

        // the retry waits (inFlightWait) until the lease nothing renews now, or the rolled-back
        // transaction, lets it take the key over
        HttpResponse<byte[]> retry = next.http().postJson("/rr/charges", k, "{}");
        assertThat(retry.statusCode()).isEqualTo(200);
        assertThat(Http.body(retry)).contains("\"instance\":\"b\"", "\"charge\":\"ch_a_1\"");
        SpanData resumed = TckTracing.span("resumed");
        assertThat(TckTracing.EXPORTER.getFinishedSpanItems()).filteredOn(s -> s.getName().equals("idempotency.step")
                && s.getParentSpanId().equals(resumed.getSpanId()))
            .singleElement().satisfies(step -> {
                assertThat(step.getAttributes().get(AttributeKey.stringKey("idempotency.step.name"))).isEqualTo("charge");
                assertThat(step.getAttributes().get(AttributeKey.booleanKey("idempotency.step.resumed"))).isTrue();
            });
    }

    @Test
    @DisplayName("S11: a duplicate waiting for its original (inFlightWait) when their instance shuts down"
        + " gracefully goes on waiting and gets the original's replay")
    void waitingDuplicateReplays() throws Exception {
        Instance stopping = start("a", true);
        String k = key();
        CompletableFuture<HttpResponse<byte[]>> original = startHeld(stopping, "/rr/orders-waiting", k);
        CompletableFuture<HttpResponse<byte[]>> waiting = startArrived(stopping, "/rr/orders-waiting", k);
        CompletableFuture<Void> stopped = beginShutdown(stopping);
        assertThat(waiting).as("the duplicate still waits").isNotDone();

        stopping.api().gate.countDown();
        HttpResponse<byte[]> done = original.get(10, TimeUnit.SECONDS);
        HttpResponse<byte[]> replay = waiting.get(10, TimeUnit.SECONDS);
        assertThat(done.statusCode()).isEqualTo(200);
        assertReplayOf(replay, done);
        assertThat(executions(done)).isEqualTo(1);
        stopped.get(30, TimeUnit.SECONDS);
    }

    @Test
    @DisplayName("S15: a streamed response still flowing when its instance shuts down gracefully is sent whole"
        + " and stored whole; the other instance replays it byte for byte")
    void streamFinishesTheDrain() throws Exception {
        Instance stopping = start("a", true);
        Instance next = start("b", true);
        String k = key();
        HttpResponse<byte[]> done = drainWhileHeld(stopping, next, "/rr/events", k).finish();
        assertThat(Http.body(done)).contains("event 0 of 1", "event 2 of 1 on a");

        HttpResponse<byte[]> replay = next.http().postJson("/rr/events", k, "{}");
        assertReplayOf(replay, done);
    }

    @Test
    @DisplayName("S12/S18: without graceful shutdown, a stopping instance's request loses its connection, a waiting"
        + " duplicate is cut off too, the key is left held (in leased mode, until the lease ends), and a retry on"
        + " the other instance runs the operation again (the run-twice case)")
    void withoutDrainTheOperationRunsAgain() throws Exception {
        Instance stopping = start("a", false);
        Instance next = start("b", true);
        String k = key();
        CompletableFuture<HttpResponse<byte[]>> original = startHeld(stopping, "/rr/orders-waiting", k);
        String recordId = stopping.api().lastRecord;
        CompletableFuture<HttpResponse<byte[]>> waiting = startArrived(stopping, "/rr/orders-waiting", k);
        stopping.server().getApplicationContext().stop();
        assertThat(original).failsWithin(10, TimeUnit.SECONDS);
        assertCutOff(waiting);
        if (!transactional()) {
            RecordInfo left = record(next.store(), recordId).orElseThrow();
            assertThat(left.state()).as("left in progress, not released").isEqualTo(RecordInfo.State.IN_PROGRESS);
        }

        // the retry waits for the key (inFlightWait): the lease nothing renews now, or the
        // transaction the database ends, then takes it over
        HttpResponse<byte[]> retry = next.http().postJson("/rr/orders-waiting", k, "{}");
        assertThat(retry.statusCode()).isEqualTo(200);
        assertThat(Http.body(retry)).contains("\"instance\":\"b\"");
        if (transactional()) {
            // the waiting duplicate may take the key itself when the original's transaction rolls
            // back with its connection, and run once more on the stopping instance, cut off too
            assertThat(executions(retry)).as("ran on both instances").isBetween(2, 3);
        } else {
            assertThat(executions(retry)).as("ran on both instances").isEqualTo(2);
        }
    }
}
