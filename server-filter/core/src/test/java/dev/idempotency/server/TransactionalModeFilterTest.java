package dev.idempotency.server;

import dev.idempotency.testsupport.Http;

import dev.idempotency.server.store.AcquireResult;
import dev.idempotency.server.store.IdempotencyStoreException;
import dev.idempotency.server.store.memory.InMemoryIdempotencyStore;
import dev.idempotency.server.store.StoredResponse;
import dev.idempotency.server.store.TransactionalIdempotencyStore;
import io.micronaut.context.ApplicationContext;
import io.micronaut.context.annotation.Property;
import io.micronaut.context.annotation.Replaces;
import io.micronaut.context.annotation.Requires;
import io.micronaut.http.HttpResponse;
import io.micronaut.http.annotation.Body;
import io.micronaut.http.annotation.Controller;
import io.micronaut.http.annotation.Post;
import io.micronaut.runtime.server.EmbeddedServer;
import io.micronaut.scheduling.TaskExecutors;
import io.micronaut.scheduling.annotation.ExecuteOn;
import io.micronaut.test.extensions.junit5.annotation.MicronautTest;
import jakarta.inject.Inject;
import jakarta.inject.Singleton;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.DisplayName;
import org.junit.jupiter.api.Test;

import java.nio.charset.StandardCharsets;
import java.time.Clock;
import java.time.Duration;
import java.util.Map;
import java.util.UUID;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.function.Function;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/**
 * The filter's transactional flow (S18) against a stand-in transactional store: commit on
 * success, rollback as the release on failure, 503 when the commit fails, no renewal, and the
 * startup check that the active store supports the mode. The PostgreSQL module proves the same
 * against a real database.
 */
@MicronautTest
@Property(name = "spec.name", value = "TransactionalModeFilterTest")
@Property(name = "idempotency.transactional", value = "true")
class TransactionalModeFilterTest {

    /** In-memory records; a transaction is emulated by releasing its acquired record on rollback. */
    @Singleton
    @Replaces(InMemoryIdempotencyStore.class)
    @Requires(property = "spec.name", value = "TransactionalModeFilterTest")
    static class FakeTransactionalStore extends InMemoryBackedStore implements TransactionalIdempotencyStore {
        final AtomicInteger commits = new AtomicInteger();
        final AtomicInteger rollbacks = new AtomicInteger();
        final AtomicInteger renewals = new AtomicInteger();
        volatile boolean failCommit;

        FakeTransactionalStore(Clock clock) {
            super(new InMemoryIdempotencyStore(clock, 1000));
        }

        /** The island: transactions run on a thread of their own, as the real store's do. */
        private final ExecutorService island = Executors.newFixedThreadPool(4, r -> {
            Thread t = new Thread(r, "fake-tx");
            t.setDaemon(true);
            return t;
        });

        @Override
        public <T> CompletionStage<T> inTransaction(Function<Transaction, T> work) {
            return CompletableFuture.supplyAsync(() -> transaction(work), island);
        }

        private <T> T transaction(Function<Transaction, T> work) {
            FakeTx tx = new FakeTx();
            T result;
            try {
                result = work.apply(tx);
            } catch (RuntimeException e) {
                tx.rollback();
                throw e;
            }
            if (tx.rollbackOnly) {
                tx.rollback();
                return result;
            }
            if (failCommit) {
                tx.rollback();
                throw new IdempotencyStoreException("commit failed (simulated)");
            }
            if (tx.pending != null) {
                tx.pending.run();
            }
            commits.incrementAndGet();
            return result;
        }

        private final class FakeTx implements Transaction {
            boolean rollbackOnly;
            String key;
            long token;

            @Override
            public AcquireResult acquire(String storeKey, byte[] fingerprint, Duration lease) {
                AcquireResult r = delegate.acquire(storeKey, fingerprint, lease).toCompletableFuture().join();
                if (r instanceof AcquireResult.Acquired a) {
                    key = storeKey;
                    token = a.fencingToken();
                }
                return r;
            }

            /** Applied at commit, like a write that becomes visible only then. */
            Runnable pending;

            @Override
            public boolean complete(String storeKey, long fencingToken, StoredResponse response, Duration retention) {
                pending = () -> delegate.complete(storeKey, fencingToken, response, retention).toCompletableFuture().join();
                return true;
            }

            @Override
            public void setRollbackOnly() {
                rollbackOnly = true;
            }

            @Override
            public boolean isRollbackOnly() {
                return rollbackOnly;
            }

            void rollback() {
                rollbacks.incrementAndGet();
                if (key != null) {
                    delegate.release(key, token).toCompletableFuture().join(); // the uncommitted record vanishes
                }
            }
        }

        @Override
        public CompletionStage<Boolean> renew(String storeKey, long fencingToken, Duration lease) {
            renewals.incrementAndGet();
            return delegate.renew(storeKey, fencingToken, lease);
        }
    }

    @Controller("/tx")
    @ExecuteOn(TaskExecutors.BLOCKING)
    @Requires(property = "spec.name", value = "TransactionalModeFilterTest")
    static class Api {
        final AtomicInteger runs = new AtomicInteger();

        @Post("/orders")
        @Idempotent(lease = "30ms")
        HttpResponse<Map<String, Object>> order(@Body Map<String, Object> body) throws InterruptedException {
            int n = runs.incrementAndGet();
            if (Boolean.TRUE.equals(body.get("fail"))) {
                return HttpResponse.serverError(Map.of("run", n));
            }
            Thread.sleep(100); // several lease periods: a renewer, if one ran, would tick
            return HttpResponse.created(Map.of("run", n));
        }
    }

    @Inject
    EmbeddedServer server;
    @Inject
    FakeTransactionalStore store;
    @Inject
    Api api;
    Http http;

    @BeforeEach
    void setUp() {
        http = new Http(server.getURI());
    }

    @AfterEach
    void reset() {
        store.failCommit = false;
    }

    private static String key() {
        return "\"" + UUID.randomUUID() + "\"";
    }

    @Test
    @DisplayName("S18: success commits the record once (no lease renewals in transactional mode); retries replay")
    void successCommits() {
        String k = key();
        int commits = store.commits.get();
        java.net.http.HttpResponse<byte[]> first = http.postJson("/tx/orders", k, "{\"a\":1}");
        assertThat(first.statusCode()).isEqualTo(201);
        assertThat(store.commits.get()).isEqualTo(commits + 1);
        assertThat(store.renewals.get()).isZero();
        int runs = api.runs.get();
        java.net.http.HttpResponse<byte[]> replay = http.postJson("/tx/orders", k, "{\"a\":1}");
        assertThat(replay.headers().firstValue("Idempotent-Replayed")).hasValue("true");
        assertThat(replay.body()).isEqualTo(first.body());
        assertThat(api.runs.get()).isEqualTo(runs);
    }

    @Test
    @DisplayName("S14/S18: a 5xx rolls the transaction back (the release): the retry runs again")
    void failureRollsBack() {
        String k = key();
        int rollbacks = store.rollbacks.get();
        int runs = api.runs.get();
        assertThat(http.postJson("/tx/orders", k, "{\"fail\":true}").statusCode()).isEqualTo(500);
        assertThat(store.rollbacks.get()).isEqualTo(rollbacks + 1);
        assertThat(http.postJson("/tx/orders", k, "{\"fail\":true}").statusCode()).isEqualTo(500);
        assertThat(api.runs.get()).isEqualTo(runs + 2);
    }

    @Test
    @DisplayName("S18/S19: a failed commit is answered 503 problem with Retry-After, not the handler's success")
    void commitFailureIs503() {
        store.failCommit = true;
        String k = key();
        java.net.http.HttpResponse<byte[]> r = http.postJson("/tx/orders", k, "{\"a\":2}");
        assertThat(r.statusCode()).isEqualTo(503);
        assertThat(r.headers().firstValue("Retry-After")).hasValue("2");
        assertThat(new String(r.body(), StandardCharsets.UTF_8)).contains("\"code\":\"idempotency-store-unavailable\"");
        store.failCommit = false;
        int runs = api.runs.get();
        assertThat(http.postJson("/tx/orders", k, "{\"a\":2}").statusCode()).isEqualTo(201);
        assertThat(api.runs.get()).isEqualTo(runs + 1);
    }

    @Controller("/txbad")
    @Requires(property = "spec.name", value = "TransactionalModeFilterTest-route")
    static class RouteOptIn {
        @Post("/one")
        @Idempotent(transactional = true)
        Map<String, Object> one() {
            return Map.of();
        }
    }

    @Test
    @DisplayName("S18: transactional mode on a store that cannot do it stops the application at startup")
    void startupCheck() {
        assertThatThrownBy(() -> ApplicationContext.run(EmbeddedServer.class, Map.of(
            "spec.name", "TransactionalModeFilterTest-global", "idempotency.transactional", "true",
            "micronaut.server.port", "-1", "micronaut.security.enabled", "false")).close())
            .hasStackTraceContaining("idempotency.transactional=true needs a transactional idempotency store")
            .hasStackTraceContaining(InMemoryIdempotencyStore.class.getName());
        assertThatThrownBy(() -> ApplicationContext.run(EmbeddedServer.class, Map.of(
            "spec.name", "TransactionalModeFilterTest-route",
            "micronaut.server.port", "-1", "micronaut.security.enabled", "false")).close())
            .hasStackTraceContaining("@Idempotent(transactional = true) on POST /txbad/one needs a transactional");
    }
}
