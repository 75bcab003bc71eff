package dev.idempotency.store.postgres;

import dev.idempotency.testsupport.TestPostgres;

import com.zaxxer.hikari.HikariConfig;
import com.zaxxer.hikari.HikariDataSource;
import dev.idempotency.server.store.AcquireResult;
import dev.idempotency.server.store.IdempotencyStore;
import dev.idempotency.server.store.IdempotencyStoreException;
import dev.idempotency.store.tck.IdempotencyStoreContractTest;
import dev.idempotency.testsupport.MutableClock;
import dev.idempotency.testsupport.TcpProxy;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.DisplayName;
import org.junit.jupiter.api.Test;

import java.net.ServerSocket;
import java.net.URI;
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

    private final List<PostgresIdempotencyStore> stores = new ArrayList<>();

    private PostgresIdempotencyStore store(MutableClock clock, PostgresStoreConfigurationProperties config,
                                           javax.sql.DataSource ds) {
        PostgresIdempotencyStore s = new PostgresIdempotencyStore(config, clock, () -> ds, () -> {
            throw new UnsupportedOperationException("no transactions in this test");
        });
        stores.add(s);
        return s;
    }

    @AfterEach
    void closeStores() {
        stores.forEach(PostgresIdempotencyStore::close);
        stores.clear();
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
        acquire(newKey(), fingerprint("warm-up"), LEASE); // migration and pool warm-up
        int before = counting.executes.get();
        long token = ((AcquireResult.Acquired) acquire(key, fingerprint("a"), LEASE)).fencingToken();
        assertThat(counting.executes.get() - before).isEqualTo(1);

        before = counting.executes.get();
        assertThat(acquire(key, fingerprint("a"), LEASE)).isInstanceOf(AcquireResult.InProgress.class);
        assertThat(acquire(key, fingerprint("b"), LEASE)).isInstanceOf(AcquireResult.Mismatch.class);
        assertThat(counting.executes.get() - before).isEqualTo(2);

        complete(key, token, response(200, "ok"), RETENTION);
        before = counting.executes.get();
        assertThat(acquire(key, fingerprint("a"), LEASE)).isInstanceOf(AcquireResult.Replay.class);
        assertThat(counting.executes.get() - before).isEqualTo(1);

        String stale = newKey();
        acquire(stale, fingerprint("a"), LEASE);
        clock.advance(LEASE.plusSeconds(1));
        before = counting.executes.get();
        assertThat(((AcquireResult.Acquired) acquire(stale, fingerprint("a"), LEASE)).takeover()).isTrue();
        assertThat(counting.executes.get() - before).isEqualTo(1);

        String done = newKey();
        long t = ((AcquireResult.Acquired) acquire(done, fingerprint("a"), LEASE)).fencingToken();
        complete(done, t, response(200, "ok"), Duration.ofMinutes(1));
        clock.advance(Duration.ofMinutes(2));
        before = counting.executes.get();
        AcquireResult fresh = acquire(done, fingerprint("b"), LEASE);
        assertThat(fresh).isInstanceOf(AcquireResult.Acquired.class);
        assertThat(((AcquireResult.Acquired) fresh).takeover()).isFalse();
        assertThat(counting.executes.get() - before).isEqualTo(1);
    }

    /** The row's version (its creating transaction) and the fencing sequence's position. */
    private String rowVersionAndSequence(String key) throws Exception {
        try (Connection c = pool.getConnection(); Statement s = c.createStatement();
             ResultSet rs = s.executeQuery("SELECT xmin::text || '/' || ctid::text || '/' || (SELECT last_value FROM "
                 + SCHEMA + ".idempotency_records_fencing_seq) FROM " + SCHEMA
                 + ".idempotency_records WHERE store_key = decode('" + key + "', 'hex')")) {
            rs.next();
            return rs.getString(1);
        }
    }

    @Test
    @DisplayName("S17: a replay, a 409 and a 422 write nothing: the row version and the token sequence stay as they were")
    void answersWithoutWrites() throws Exception {
        String key = newKey();
        long token = ((AcquireResult.Acquired) acquire(key, fingerprint("a"), LEASE)).fencingToken();
        String inProgress = rowVersionAndSequence(key);
        assertThat(acquire(key, fingerprint("a"), LEASE)).isInstanceOf(AcquireResult.InProgress.class);
        assertThat(acquire(key, fingerprint("b"), LEASE)).isInstanceOf(AcquireResult.Mismatch.class);
        assertThat(rowVersionAndSequence(key)).isEqualTo(inProgress);

        complete(key, token, response(201, "done"), RETENTION);
        String completed = rowVersionAndSequence(key);
        for (int i = 0; i < 5; i++) {
            assertThat(acquire(key, fingerprint("a"), LEASE)).isInstanceOf(AcquireResult.Replay.class);
            assertThat(acquire(key, fingerprint("b"), LEASE)).isInstanceOf(AcquireResult.Mismatch.class);
        }
        assertThat(rowVersionAndSequence(key)).isEqualTo(completed);
    }

    @Test
    @DisplayName("S17: the store's JDBC work runs on as many threads as the pool has connections")
    void threadsSizedToThePool() {
        assertThat(((PostgresIdempotencyStore) store).threads()).isEqualTo(40);
        PostgresStoreConfigurationProperties config = config();
        config.setThreads(3);
        assertThat(store(clock, config, pool).threads()).isEqualTo(3);
    }

    @Test
    @DisplayName("S12: fencing tokens strictly increase per key across takeovers, releases and retention expiry")
    void tokensIncrease() {
        String key = newKey();
        List<Long> tokens = new ArrayList<>();
        long t = ((AcquireResult.Acquired) acquire(key, fingerprint("a"), LEASE)).fencingToken();
        tokens.add(t);
        release(key, t);
        t = ((AcquireResult.Acquired) acquire(key, fingerprint("a"), LEASE)).fencingToken();
        tokens.add(t);
        clock.advance(LEASE.plusSeconds(1));
        t = ((AcquireResult.Acquired) acquire(key, fingerprint("a"), LEASE)).fencingToken();
        tokens.add(t);
        complete(key, t, response(200, "x"), Duration.ofMinutes(1));
        clock.advance(Duration.ofMinutes(2));
        tokens.add(((AcquireResult.Acquired) acquire(key, fingerprint("a"), LEASE)).fencingToken());
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
            long token = ((AcquireResult.Acquired) join(s.acquire(k, fingerprint("a"), LEASE))).fencingToken();
            join(s.complete(k, token, response(200, "x"), Duration.ofMinutes(5)));
        }
        String liveKey = newKey();
        long live = ((AcquireResult.Acquired) join(s.acquire(liveKey, fingerprint("a"), LEASE))).fencingToken();
        join(s.complete(liveKey, live, response(200, "live"), Duration.ofHours(2)));
        join(s.acquire(newKey(), fingerprint("a"), LEASE)); // in progress, lease ends in 30 s
        clock.advance(Duration.ofMinutes(10));

        assertThat(s.purgeExpired()).isEqualTo(6); // two batches of three, then the run stops
        assertThat(s.purgeExpired()).isEqualTo(4);
        assertThat(s.purgeExpired()).isZero();
        assertThat(count("true")).isEqualTo(2); // the live record and the stale lease within its grace
        clock.advance(Duration.ofMinutes(30));
        assertThat(s.purgeExpired()).isEqualTo(1);
        assertThat(join(s.acquire(liveKey, fingerprint("a"), LEASE))).isInstanceOf(AcquireResult.Replay.class);
    }

    @Test
    @DisplayName("S16: a table autovacuum does not reach is reported (its deleted rows' space would never be reused)")
    void warnsWhenAutovacuumIsOff() throws Exception {
        PostgresIdempotencyStore s = (PostgresIdempotencyStore) store;
        acquire(s, newKey()); // the schema in place
        boolean serverOn;
        try (Connection c = pool.getConnection(); Statement st = c.createStatement();
             ResultSet rs = st.executeQuery("SHOW autovacuum")) {
            rs.next();
            serverOn = rs.getString(1).equals("on");
        }
        assertThat(s.vacuumWarning().get(30, TimeUnit.SECONDS).isPresent()).isEqualTo(!serverOn);
        TestPostgres.execute("ALTER TABLE " + SCHEMA + ".idempotency_records SET (autovacuum_enabled = false)");
        try {
            assertThat(s.vacuumWarning().get(30, TimeUnit.SECONDS)).hasValueSatisfying(w -> assertThat(w)
                .contains("autovacuum is off for " + SCHEMA + ".idempotency_records")
                .contains("table autovacuum_enabled=false").contains("Turn autovacuum on"));
        } finally {
            TestPostgres.execute("ALTER TABLE " + SCHEMA + ".idempotency_records RESET (autovacuum_enabled)");
        }
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
                + " SELECT decode(md5(g::text) || md5(g::text), 'hex'), '\\x00', g, 1, true, now(), '2000-01-01', 200, '{}', '', false"
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
    @DisplayName("S16: a purge batch that outlives statement-timeout is ended by PostgreSQL; its connection stays in"
        + " use, the next batches are half as large and grow back after a run without a timeout")
    void purgeTimeoutKeepsTheConnection() throws Exception {
        join(store(clock, config(), pool).acquire(newKey(), fingerprint("a"), LEASE)); // the schema, migrated
        TestPostgres.execute("DELETE FROM " + SCHEMA + ".idempotency_records");
        PostgresStoreConfigurationProperties config = config();
        config.setStatementTimeout(Duration.ofMillis(500));
        config.setLockTimeout(Duration.ofMillis(200));
        config.setPurgeBatchSize(100);
        config.setMigrate(false); // Flyway would need a second connection
        try (HikariDataSource single = TestPostgres.pool(TestPostgres.server(), 1)) {
            PostgresIdempotencyStore s = store(clock, config, single);
            for (int i = 0; i < 30; i++) {
                String k = newKey();
                long token = ((AcquireResult.Acquired) join(s.acquire(k, fingerprint("a"), LEASE))).fencingToken();
                join(s.complete(k, token, response(200, "x"), Duration.ofMinutes(1)));
            }
            clock.advance(Duration.ofMinutes(10));
            int backend = backendPid(single);
            try (Connection locker = pool.getConnection(); Statement st = locker.createStatement()) {
                locker.setAutoCommit(false);
                // reads (and the purge's FOR UPDATE) pass, deletes wait
                st.execute("LOCK TABLE " + SCHEMA + ".idempotency_records IN SHARE MODE");
                long start = System.nanoTime();
                assertThatThrownBy(s::purgeExpired)
                    .isInstanceOf(IdempotencyStoreException.class)
                    .hasMessageContaining("a purge batch of 100 records ran past the statement timeout (PT0.5S)")
                    .hasMessageContaining("the next batches take 50")
                    .hasMessageContaining("autovacuum")
                    .cause().satisfies(e -> {
                        // the server's own statement_timeout, not a cancel request racing the socket's timeout
                        assertThat(((java.sql.SQLException) e).getSQLState()).isEqualTo("57014");
                        assertThat(e.getMessage()).contains("canceling statement due to statement timeout");
                    });
                assertThat(Duration.ofNanos(System.nanoTime() - start)).isLessThan(Duration.ofSeconds(3));
                locker.rollback();
            }
            assertThat(backendPid(single)).as("the pool's one connection, not a replacement for a broken one")
                .isEqualTo(backend);
            assertThat(s.purgeBatchSize()).isEqualTo(50);
            assertThat(count("completed")).as("the timed-out batch was rolled back").isEqualTo(30);

            assertThat(s.purgeExpired()).isEqualTo(30);
            assertThat(s.purgeBatchSize()).isEqualTo(100);
            assertThat(count("completed")).isZero();
            assertThat(backendPid(single)).isEqualTo(backend);
        }
    }

    @Test
    @DisplayName("S16: a purge batch cancelled by someone else before its timeout is a plain failure: the batch"
        + " size stays")
    void purgeCancelledIsNotSlow() throws Exception {
        join(store(clock, config(), pool).acquire(newKey(), fingerprint("a"), LEASE)); // the schema, migrated
        PostgresStoreConfigurationProperties config = config();
        config.setStatementTimeout(Duration.ofSeconds(20));
        config.setPurgeBatchSize(100);
        config.setMigrate(false);
        try (HikariDataSource single = TestPostgres.pool(TestPostgres.server(), 1)) {
            PostgresIdempotencyStore s = store(clock, config, single);
            int backend = backendPid(single);
            try (Connection locker = pool.getConnection(); Statement st = locker.createStatement()) {
                locker.setAutoCommit(false);
                st.execute("LOCK TABLE " + SCHEMA + ".idempotency_records IN SHARE MODE");
                CompletableFuture<Integer> purge = CompletableFuture.supplyAsync(s::purgeExpired);
                try (Connection operator = pool.getConnection(); Statement op = operator.createStatement()) {
                    long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(10);
                    boolean cancelled = false;
                    while (!cancelled && System.nanoTime() < deadline) {
                        try (ResultSet rs = op.executeQuery("SELECT pg_cancel_backend(pid) FROM pg_stat_activity"
                            + " WHERE pid = " + backend + " AND wait_event_type = 'Lock'")) {
                            cancelled = rs.next() && rs.getBoolean(1);
                        }
                        Thread.sleep(20);
                    }
                    assertThat(cancelled).as("the purge's DELETE was seen waiting for the lock").isTrue();
                }
                assertThatThrownBy(() -> purge.get(10, TimeUnit.SECONDS))
                    .cause().isInstanceOf(IdempotencyStoreException.class)
                    .hasMessageContaining("purge failed")
                    .hasMessageContaining("57014");
                locker.rollback();
            }
            assertThat(s.purgeBatchSize()).isEqualTo(100);
        }
    }

    private static int backendPid(javax.sql.DataSource ds) throws Exception {
        try (Connection c = ds.getConnection(); Statement st = c.createStatement();
             ResultSet rs = st.executeQuery("SELECT pg_backend_pid()")) {
            rs.next();
            return rs.getInt(1);
        }
    }

    @Test
    @DisplayName("S19: a statement that outlives statement-timeout fails as IdempotencyStoreException, in time")
    void statementTimeout() throws Exception {
        PostgresStoreConfigurationProperties config = config();
        config.setStatementTimeout(Duration.ofMillis(500));
        config.setLockTimeout(Duration.ofMillis(200));
        PostgresIdempotencyStore s = store(clock, config, pool);
        join(s.acquire(newKey(), fingerprint("a"), LEASE));
        try (Connection locker = pool.getConnection(); Statement st = locker.createStatement()) {
            locker.setAutoCommit(false);
            st.execute("LOCK TABLE " + SCHEMA + ".idempotency_records IN ACCESS EXCLUSIVE MODE");
            long start = System.nanoTime();
            assertThatThrownBy(() -> join(s.acquire(newKey(), fingerprint("a"), LEASE)))
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
            assertThatThrownBy(() -> join(s.acquire(newKey(), fingerprint("a"), LEASE)))
                .isInstanceOf(IdempotencyStoreException.class);
            assertThatThrownBy(() -> join(s.complete(newKey(), 1, response(200, "x"), RETENTION)))
                .isInstanceOf(IdempotencyStoreException.class);
            assertThat(Duration.ofNanos(System.nanoTime() - start)).isLessThan(Duration.ofSeconds(10));
        }
    }

    @Test
    @DisplayName("S19: the wait for a pooled connection is bounded by the store's connection-timeout, not the pool's;"
        + " a free connection serves again at once")
    void connectionWaitIsTheStoresOwn() throws Exception {
        HikariConfig hc = new HikariConfig();
        hc.setJdbcUrl(TestPostgres.server().url());
        hc.setUsername(TestPostgres.server().user());
        hc.setPassword(TestPostgres.server().password());
        hc.setMaximumPoolSize(1);
        hc.setConnectionTimeout(60_000);
        try (HikariDataSource single = new HikariDataSource(hc)) {
            acquire(store(clock, config(), pool), newKey()); // the schema migrated on the big pool
            PostgresStoreConfigurationProperties config = config();
            config.setMigrate(false);
            config.setConnectionTimeout(Duration.ofMillis(250));
            PostgresIdempotencyStore s = store(clock, config, single);
            acquire(s, newKey()); // the pool's one connection opened and returned
            try (Connection held = single.getConnection()) {
                // the pool would wait 60 s; the store waits 250 ms and says so
                assertThatThrownBy(() -> s.acquire(newKey(), fingerprint("a"), LEASE).toCompletableFuture()
                        .get(30, TimeUnit.SECONDS))
                    .hasCauseInstanceOf(IdempotencyStoreException.class)
                    .hasMessageMatching("(?s).*request timed out after \\d{3}ms.*");
                assertThat(held.isValid(1)).isTrue();
            }
            assertThat(acquire(s, newKey())).isInstanceOf(AcquireResult.Acquired.class);
        }
    }

    @Test
    @DisplayName("S19: when the database returns, the store serves at once, though HikariCP is still in its back-off"
        + " (up to 5 s): it connects directly while the pool is empty, then goes back to the pool")
    void servesAtOnceWhenTheDatabaseReturns() throws Exception {
        acquire(store(clock, config(), pool), newKey()); // the schema migrated on the big pool
        URI target = URI.create(TestPostgres.server().url().substring("jdbc:".length()));
        try (TcpProxy proxy = new TcpProxy(target.getHost(), target.getPort())) {
            HikariConfig hc = new HikariConfig();
            hc.setJdbcUrl("jdbc:postgresql://127.0.0.1:" + proxy.port() + target.getRawPath());
            hc.setUsername(TestPostgres.server().user());
            hc.setPassword(TestPostgres.server().password());
            hc.setMaximumPoolSize(2);
            hc.setConnectionTimeout(250);
            hc.setInitializationFailTimeout(-1);
            try (HikariDataSource behind = new HikariDataSource(hc)) {
                PostgresStoreConfigurationProperties config = config();
                config.setMigrate(false);
                config.setConnectionTimeout(Duration.ofMillis(250));
                PostgresIdempotencyStore s = store(clock, config, behind);
                assertThat(acquire(s, newKey())).isInstanceOf(AcquireResult.Acquired.class);

                proxy.stop();
                // long enough for HikariCP's back-off between attempts to grow past a second
                long until = System.nanoTime() + TimeUnit.SECONDS.toNanos(3);
                int failed = 0;
                while (System.nanoTime() < until) {
                    try {
                        acquire(s, newKey());
                    } catch (IdempotencyStoreException expected) {
                        failed++;
                    }
                    Thread.sleep(50);
                }
                assertThat(failed).isPositive();
                assertThat(behind.getHikariPoolMXBean().getTotalConnections()).isZero();

                proxy.start();
                assertThat(acquire(s, newKey())).as("the first call after the database is back")
                    .isInstanceOf(AcquireResult.Acquired.class);
                // HikariCP refills on its own schedule (usually within a second here, once in a loaded
                // build not within 20 s): the wait is generous, and every call meanwhile must succeed
                long started = System.nanoTime();
                long deadline = started + TimeUnit.SECONDS.toNanos(60);
                int direct = 0;
                while (behind.getHikariPoolMXBean().getTotalConnections() == 0 && System.nanoTime() < deadline) {
                    assertThat(acquire(s, newKey())).isInstanceOf(AcquireResult.Acquired.class);
                    direct++;
                    Thread.sleep(20);
                }
                int calls = direct;
                long tookMillis = TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - started);
                // the description, a thread dump among it, is only built when the assertion fails
                assertThat(behind.getHikariPoolMXBean().getTotalConnections())
                    .as(() -> String.format("back on the pool (after %d direct calls in %d ms; pool: %d idle,"
                            + " %d waiting); the pool's threads:%s", calls, tookMillis,
                        behind.getHikariPoolMXBean().getIdleConnections(),
                        behind.getHikariPoolMXBean().getThreadsAwaitingConnection(), threadsOf(behind.getPoolName())))
                    .isPositive();
                assertThat(acquire(s, newKey())).isInstanceOf(AcquireResult.Acquired.class);
            }
        }
    }

    /**
     * @return the state and top of the stack of each thread named after the pool (its connection
     *     adder among them): in CI the pool once did not refill within 60 s, and what its adder was
     *     doing then is the first thing to know
     */
    private static String threadsOf(String poolName) {
        StringBuilder out = new StringBuilder();
        Thread.getAllStackTraces().forEach((thread, stack) -> {
            if (thread.getName().startsWith(poolName)) {
                out.append("\n  ").append(thread.getName()).append(' ').append(thread.getState());
                for (int i = 0; i < Math.min(stack.length, 15); i++) {
                    out.append("\n    at ").append(stack[i]);
                }
            }
        });
        return out.length() == 0 ? " none" : out.toString();
    }

    private static AcquireResult acquire(PostgresIdempotencyStore s, String key) {
        return join(s.acquire(key, fingerprint("a"), LEASE));
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
