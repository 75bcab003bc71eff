package dev.idempotency.store.postgres;

import dev.idempotency.testsupport.TestPostgres;

import com.zaxxer.hikari.HikariDataSource;
import dev.idempotency.server.store.AcquireResult;
import dev.idempotency.server.store.IdempotencyStore;
import dev.idempotency.server.store.IdempotencyStoreException;
import dev.idempotency.store.tck.IdempotencyStoreContractTest;
import dev.idempotency.testsupport.MutableClock;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.DisplayName;
import org.junit.jupiter.api.Test;

import java.net.ServerSocket;
import java.sql.Connection;
import java.sql.ResultSet;
import java.sql.Statement;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/**
 * The shared store contract suite (S17) against real PostgreSQL, plus what is particular to this
 * store: one statement per acquire, fencing-token order, the batched purge, timeouts and an
 * unreachable server.
 */
class PostgresIdempotencyStoreContractTest extends IdempotencyStoreContractTest {

    private static final String SCHEMA = TestPostgres.newSchema();
    private static HikariDataSource pool;
    private static CountingDataSource counting;

    @BeforeAll
    static void startPool() {
        pool = TestPostgres.pool(TestPostgres.server(), 40);
        counting = new CountingDataSource(pool);
    }

    @AfterAll
    static void cleanUp() {
        pool.close();
        TestPostgres.dropSchema(SCHEMA);
    }

    static PostgresStoreConfigurationProperties config() {
        PostgresStoreConfigurationProperties config = new PostgresStoreConfigurationProperties();
        config.setEnabled(true);
        config.setSchema(SCHEMA);
        return config;
    }

    private static PostgresIdempotencyStore store(MutableClock clock, PostgresStoreConfigurationProperties config,
                                                  javax.sql.DataSource ds) {
        return new PostgresIdempotencyStore(config, clock, () -> ds, () -> {
            throw new UnsupportedOperationException("no transactions in this test");
        });
    }

    @Override
    protected IdempotencyStore store(MutableClock clock) {
        return store(clock, config(), counting.dataSource);
    }

    @Override
    protected int racingThreads() {
        return 32;
    }

    private long count(String where) throws Exception {
        try (Connection c = pool.getConnection(); Statement s = c.createStatement();
             ResultSet rs = s.executeQuery("SELECT count(*) FROM " + SCHEMA + ".idempotency_records WHERE " + where)) {
            rs.next();
            return rs.getLong(1);
        }
    }

    @Test
    @DisplayName("S10: every acquire outcome (absent, in progress, mismatch, replay, takeover) is exactly one statement")
    void oneStatementPerAcquire() {
        String key = newKey();
        store.acquire(newKey(), fingerprint("warm-up"), LEASE); // migration and pool warm-up
        int before = counting.executes.get();
        long token = ((AcquireResult.Acquired) store.acquire(key, fingerprint("a"), LEASE)).fencingToken();
        assertThat(counting.executes.get() - before).isEqualTo(1);

        before = counting.executes.get();
        assertThat(store.acquire(key, fingerprint("a"), LEASE)).isInstanceOf(AcquireResult.InProgress.class);
        assertThat(store.acquire(key, fingerprint("b"), LEASE)).isInstanceOf(AcquireResult.Mismatch.class);
        assertThat(counting.executes.get() - before).isEqualTo(2);

        store.complete(key, token, response(200, "ok"), RETENTION);
        before = counting.executes.get();
        assertThat(store.acquire(key, fingerprint("a"), LEASE)).isInstanceOf(AcquireResult.Replay.class);
        assertThat(counting.executes.get() - before).isEqualTo(1);

        String stale = newKey();
        store.acquire(stale, fingerprint("a"), LEASE);
        clock.advance(LEASE.plusSeconds(1));
        before = counting.executes.get();
        assertThat(((AcquireResult.Acquired) store.acquire(stale, fingerprint("a"), LEASE)).takeover()).isTrue();
        assertThat(counting.executes.get() - before).isEqualTo(1);
    }

    @Test
    @DisplayName("S12: fencing tokens strictly increase per key across takeovers, releases and retention expiry")
    void tokensIncrease() {
        String key = newKey();
        List<Long> tokens = new ArrayList<>();
        long t = ((AcquireResult.Acquired) store.acquire(key, fingerprint("a"), LEASE)).fencingToken();
        tokens.add(t);
        store.release(key, t);
        t = ((AcquireResult.Acquired) store.acquire(key, fingerprint("a"), LEASE)).fencingToken();
        tokens.add(t);
        clock.advance(LEASE.plusSeconds(1));
        t = ((AcquireResult.Acquired) store.acquire(key, fingerprint("a"), LEASE)).fencingToken();
        tokens.add(t);
        store.complete(key, t, response(200, "x"), Duration.ofMinutes(1));
        clock.advance(Duration.ofMinutes(2));
        tokens.add(((AcquireResult.Acquired) store.acquire(key, fingerprint("a"), LEASE)).fencingToken());
        assertThat(tokens).isSorted().doesNotHaveDuplicates();
    }

    @Test
    @DisplayName("S16: the purge deletes expired records in bounded batches and keeps live ones and fresh stale leases")
    void purgeInBatches() throws Exception {
        TestPostgres.execute("DELETE FROM " + SCHEMA + ".idempotency_records");
        PostgresStoreConfigurationProperties config = config();
        config.setPurgeBatchSize(3);
        config.setPurgeMaxBatches(2);
        config.setPurgeStaleLeaseGrace(Duration.ofMinutes(30));
        PostgresIdempotencyStore s = store(clock, config, pool);
        for (int i = 0; i < 10; i++) {
            String k = newKey();
            long token = ((AcquireResult.Acquired) s.acquire(k, fingerprint("a"), LEASE)).fencingToken();
            s.complete(k, token, response(200, "x"), Duration.ofMinutes(5));
        }
        String liveKey = newKey();
        long live = ((AcquireResult.Acquired) s.acquire(liveKey, fingerprint("a"), LEASE)).fencingToken();
        s.complete(liveKey, live, response(200, "live"), Duration.ofHours(2));
        s.acquire(newKey(), fingerprint("a"), LEASE); // in progress, lease ends in 30 s
        clock.advance(Duration.ofMinutes(10));

        assertThat(s.purgeExpired()).isEqualTo(6); // two batches of three, then the run stops
        assertThat(s.purgeExpired()).isEqualTo(4);
        assertThat(s.purgeExpired()).isZero();
        assertThat(count("true")).isEqualTo(2); // the live record and the stale lease within its grace
        clock.advance(Duration.ofMinutes(30));
        assertThat(s.purgeExpired()).isEqualTo(1);
        assertThat(s.acquire(liveKey, fingerprint("a"), LEASE)).isInstanceOf(AcquireResult.Replay.class);
    }

    @Test
    @DisplayName("S16: purges on many instances at once share the work: each record deleted once, no errors")
    void concurrentPurges() throws Exception {
        TestPostgres.execute("DELETE FROM " + SCHEMA + ".idempotency_records");
        PostgresStoreConfigurationProperties config = config();
        config.setPurgeBatchSize(50);
        config.setPurgeMaxBatches(100);
        PostgresIdempotencyStore s = store(clock, config, pool);
        try (Connection c = pool.getConnection(); Statement st = c.createStatement()) {
            st.execute("INSERT INTO " + SCHEMA + ".idempotency_records (store_key, fingerprint, fencing_token, holder,"
                + " completed, acquired_at, expires_at, response_status, response_headers, response_body, body_omitted)"
                + " SELECT md5(g::text) || md5(g::text), '\\x00', g, 1, true, now(), '2000-01-01', 200, '{}', '', false"
                + " FROM generate_series(1, 2000) g");
        }
        List<CompletableFuture<Integer>> runs = new ArrayList<>();
        CountDownLatch start = new CountDownLatch(1);
        for (int i = 0; i < 4; i++) {
            runs.add(CompletableFuture.supplyAsync(() -> {
                try {
                    start.await();
                } catch (InterruptedException e) {
                    throw new IllegalStateException(e);
                }
                return s.purgeExpired();
            }));
        }
        start.countDown();
        int total = 0;
        for (CompletableFuture<Integer> r : runs) {
            total += r.get(60, TimeUnit.SECONDS);
        }
        assertThat(total).isEqualTo(2000);
        assertThat(count("true")).isZero();
    }

    @Test
    @DisplayName("S19: a statement that outlives statement-timeout fails as IdempotencyStoreException, in time")
    void statementTimeout() throws Exception {
        PostgresStoreConfigurationProperties config = config();
        config.setStatementTimeout(Duration.ofMillis(500));
        config.setLockTimeout(Duration.ofMillis(200));
        PostgresIdempotencyStore s = store(clock, config, pool);
        s.acquire(newKey(), fingerprint("a"), LEASE);
        try (Connection locker = pool.getConnection(); Statement st = locker.createStatement()) {
            locker.setAutoCommit(false);
            st.execute("LOCK TABLE " + SCHEMA + ".idempotency_records IN ACCESS EXCLUSIVE MODE");
            long start = System.nanoTime();
            assertThatThrownBy(() -> s.acquire(newKey(), fingerprint("a"), LEASE))
                .isInstanceOf(IdempotencyStoreException.class)
                .hasMessageContaining("57014");
            assertThat(Duration.ofNanos(System.nanoTime() - start)).isLessThan(Duration.ofSeconds(3));
            locker.rollback();
        }
    }

    @Test
    @DisplayName("S19: an unreachable server fails fast as IdempotencyStoreException")
    void unreachable() throws Exception {
        int closedPort;
        try (ServerSocket socket = new ServerSocket(0)) {
            closedPort = socket.getLocalPort();
        }
        TestPostgres.Server nowhere = new TestPostgres.Server("jdbc:postgresql://127.0.0.1:" + closedPort + "/test",
            "postgres", "", false);
        try (HikariDataSource dead = TestPostgres.pool(nowhere, 2)) {
            PostgresIdempotencyStore s = store(clock, config(), dead);
            long start = System.nanoTime();
            assertThatThrownBy(() -> s.acquire(newKey(), fingerprint("a"), LEASE))
                .isInstanceOf(IdempotencyStoreException.class);
            assertThatThrownBy(() -> s.complete(newKey(), 1, response(200, "x"), RETENTION))
                .isInstanceOf(IdempotencyStoreException.class);
            assertThat(Duration.ofNanos(System.nanoTime() - start)).isLessThan(Duration.ofSeconds(10));
        }
    }

    @Test
    @DisplayName("S5/S17: configuration rejects a table name that is not a plain identifier")
    void tableNameValidated() {
        PostgresStoreConfigurationProperties config = new PostgresStoreConfigurationProperties();
        assertThatThrownBy(() -> config.setTableName("records; DROP TABLE x"))
            .hasMessageContaining("idempotency.store.postgres.table-name");
        assertThatThrownBy(() -> config.setSchema("Public"))
            .hasMessageContaining("idempotency.store.postgres.schema");
        PostgresStoreConfigurationProperties slow = new PostgresStoreConfigurationProperties();
        slow.setLockTimeout(Duration.ofSeconds(5));
        assertThatThrownBy(() -> store(clock, slow, pool)).hasMessageContaining("lock-timeout");
    }
}
