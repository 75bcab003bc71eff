package dev.idempotency.store.postgres;

import com.zaxxer.hikari.HikariDataSource;
import dev.idempotency.server.store.AcquireResult;
import dev.idempotency.server.store.StoredResponse;
import dev.idempotency.testsupport.MutableClock;
import dev.idempotency.testsupport.TestPostgres;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.DisplayName;
import org.junit.jupiter.api.Test;

import java.nio.charset.StandardCharsets;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.Statement;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import java.util.stream.Collectors;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * Group commit in the PostgreSQL store (S10, S12, S17): acquires and completions that wait while
 * the store's statement thread is busy go to the database together, in one transaction, and
 * still answer each call as if it had run alone. The store gets one statement thread, which a
 * first acquire holds by waiting for a record this test inserts and keeps uncommitted; what
 * arrives meanwhile forms the next batch. "One commit" is read off the rows themselves: rows
 * written by one transaction share its id ({@code xmin}).
 */
class GroupCommitTest {

    private static final String SCHEMA = TestPostgres.newSchema();
    private static final Duration LEASE = Duration.ofSeconds(30);
    private static HikariDataSource pool;

    private final MutableClock clock = new MutableClock(Instant.parse("2026-11-23T10:00:00Z"));
    private PostgresIdempotencyStore store;

    @BeforeAll
    static void startPool() {
        pool = TestPostgres.pool(TestPostgres.server(), 8);
    }

    @AfterAll
    static void cleanUp() {
        pool.close();
        TestPostgres.dropSchema(SCHEMA);
    }

    @BeforeEach
    void createStore() {
        store = store(Duration.ofSeconds(5));
        join(store.acquire(key(), fp("warm-up"), LEASE)); // the migration, and the pool warmed up
    }

    @AfterEach
    void closeStore() {
        store.close();
    }

    private PostgresIdempotencyStore store(Duration lockTimeout) {
        PostgresStoreConfigurationProperties config = new PostgresStoreConfigurationProperties();
        config.setEnabled(true);
        config.setSchema(SCHEMA);
        config.setThreads(1);
        config.setLockTimeout(lockTimeout);
        config.setStatementTimeout(lockTimeout.plusSeconds(5));
        return new PostgresIdempotencyStore(config, clock, () -> pool, () -> {
            throw new UnsupportedOperationException("no transactions in this test");
        });
    }

    private static String key() {
        return UUID.randomUUID().toString().replace("-", "");
    }

    private static byte[] fp(String s) {
        return s.getBytes(StandardCharsets.UTF_8);
    }

    private static <T> T join(java.util.concurrent.CompletionStage<T> f) {
        return f.toCompletableFuture().orTimeout(30, TimeUnit.SECONDS).join();
    }

    /**
     * Inserts {@code key}'s record in a transaction left open, then has the store acquire it: the
     * store's only statement thread waits on that row until {@link Held#close()} (or its
     * lock-timeout).
     */
    private final class Held implements AutoCloseable {
        final Connection connection;
        final CompletableFuture<AcquireResult> waiting;

        Held(String key) throws Exception {
            connection = pool.getConnection();
            connection.setAutoCommit(false);
            try (PreparedStatement ps = connection.prepareStatement("INSERT INTO " + SCHEMA + ".idempotency_records"
                + " (store_key, fingerprint, fencing_token, holder, completed, acquired_at, expires_at)"
                + " VALUES (?, '\\x00', 1, 1, false, now(), now())")) {
                ps.setBytes(1, StoreKeys.encode(key));
                ps.executeUpdate();
            }
            waiting = store.acquire(key, fp("held"), LEASE).toCompletableFuture();
            awaitLockWait();
        }

        @Override
        public void close() throws Exception {
            if (!connection.isClosed()) {
                connection.rollback();
                connection.close();
            }
        }
    }

    /** Waits until a statement of this schema waits for a lock: the store's thread is busy. */
    private static void awaitLockWait() throws Exception {
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(20);
        try (Connection c = pool.getConnection(); Statement s = c.createStatement()) {
            while (System.nanoTime() < deadline) {
                try (ResultSet rs = s.executeQuery("SELECT count(*) FROM pg_stat_activity WHERE wait_event_type = 'Lock'"
                    + " AND query LIKE '%" + SCHEMA + "%'")) {
                    rs.next();
                    if (rs.getLong(1) > 0) {
                        return;
                    }
                }
                Thread.sleep(5);
            }
        }
        throw new AssertionError("the store's statement never waited for the held record");
    }

    /** @return the distinct transaction ids that last wrote these keys' rows */
    private static List<String> writers(List<String> keys) throws Exception {
        try (Connection c = pool.getConnection(); PreparedStatement ps = c.prepareStatement("SELECT DISTINCT xmin::text"
            + " FROM " + SCHEMA + ".idempotency_records WHERE store_key = ANY(?)")) {
            ps.setArray(1, c.createArrayOf("bytea", keys.stream().map(StoreKeys::encode).toArray(byte[][]::new)));
            List<String> ids = new ArrayList<>();
            try (ResultSet rs = ps.executeQuery()) {
                while (rs.next()) {
                    ids.add(rs.getString(1));
                }
            }
            return ids;
        }
    }

    @Test
    @DisplayName("S10/S17: acquires that queue while the store is busy are one batch, one commit; each call gets its"
        + " own answer, calls for the same key answered as if one after the other")
    void acquiresShareOneCommit() throws Exception {
        long before = store.acquireBatches();
        List<String> keys = new ArrayList<>();
        List<CompletableFuture<AcquireResult>> fresh = new ArrayList<>();
        String same = key();
        List<CompletableFuture<AcquireResult>> sameKey = new ArrayList<>();
        String held = key();
        // an abandoned in-progress record whose lease ended, and a completed one to replay
        String expired = key();
        try (Connection c = pool.getConnection(); PreparedStatement ps = c.prepareStatement("INSERT INTO " + SCHEMA
            + ".idempotency_records (store_key, fingerprint, fencing_token, holder, completed, acquired_at, expires_at)"
            + " VALUES (?, ?, 7, 1, false, ?, ?)")) {
            ps.setBytes(1, StoreKeys.encode(expired));
            ps.setBytes(2, fp("a"));
            ps.setObject(3, clock.instant().minusSeconds(60).atOffset(java.time.ZoneOffset.UTC));
            ps.setObject(4, clock.instant().minusSeconds(30).atOffset(java.time.ZoneOffset.UTC));
            ps.executeUpdate();
        }
        String done = key();
        long doneToken = ((AcquireResult.Acquired) join(store.acquire(done, fp("a"), LEASE))).fencingToken();
        assertThat(join(store.complete(done, doneToken, new StoredResponse(201, Map.of(), fp("done"), false),
            Duration.ofHours(1)))).isTrue();
        CompletableFuture<AcquireResult> takeover;
        CompletableFuture<AcquireResult> replay;
        try (Held h = new Held(held)) {
            takeover = store.acquire(expired, fp("a"), LEASE).toCompletableFuture();
            replay = store.acquire(done, fp("a"), LEASE).toCompletableFuture();
            for (int i = 0; i < 20; i++) {
                String k = key();
                keys.add(k);
                fresh.add(store.acquire(k, fp("a"), LEASE).toCompletableFuture());
            }
            sameKey.add(store.acquire(same, fp("a"), LEASE).toCompletableFuture());
            sameKey.add(store.acquire(same, fp("a"), LEASE).toCompletableFuture());
            sameKey.add(store.acquire(same, fp("b"), LEASE).toCompletableFuture());
            assertThat(fresh).noneMatch(CompletableFuture::isDone);
            h.close();
            assertThat(join(h.waiting)).isInstanceOf(AcquireResult.Acquired.class); // the held insert rolled back
        }
        List<Long> tokens = fresh.stream().map(GroupCommitTest::join)
            .map(r -> ((AcquireResult.Acquired) r).fencingToken()).toList();
        assertThat(tokens).doesNotHaveDuplicates();
        assertThat(join(sameKey.get(0))).isInstanceOf(AcquireResult.Acquired.class);
        assertThat(join(sameKey.get(1))).isInstanceOf(AcquireResult.InProgress.class);
        assertThat(join(sameKey.get(2))).isInstanceOf(AcquireResult.Mismatch.class);
        assertThat(join(takeover)).isInstanceOfSatisfying(AcquireResult.Acquired.class,
            a -> assertThat(a.takeover()).isTrue());
        assertThat(join(replay)).isInstanceOfSatisfying(AcquireResult.Replay.class,
            r -> assertThat(r.response().body()).isEqualTo(fp("done")));
        assertThat(store.acquireBatches() - before).isEqualTo(3); // the completed key's, the held one alone, the rest
        keys.add(same);
        keys.add(expired);
        assertThat(writers(keys)).hasSize(1);
        // every new record's lease ends exactly one lease after the store's "now"
        try (Connection c = pool.getConnection(); PreparedStatement ps = c.prepareStatement("SELECT DISTINCT acquired_at,"
            + " expires_at FROM " + SCHEMA + ".idempotency_records WHERE store_key = ANY(?)")) {
            ps.setArray(1, c.createArrayOf("bytea", keys.stream().map(StoreKeys::encode).toArray(byte[][]::new)));
            try (ResultSet rs = ps.executeQuery()) {
                assertThat(rs.next()).isTrue();
                assertThat(rs.getObject(1, java.time.OffsetDateTime.class).toInstant()).isEqualTo(clock.instant());
                assertThat(rs.getObject(2, java.time.OffsetDateTime.class).toInstant()).isEqualTo(clock.instant().plus(LEASE));
                assertThat(rs.next()).isFalse();
            }
        }
    }

    @Test
    @DisplayName("S12/S17: completions that queue are one batch, one commit; a stale token is still refused")
    void completionsShareOneCommit() throws Exception {
        Map<String, Long> acquired = new java.util.LinkedHashMap<>();
        for (int i = 0; i < 10; i++) {
            String k = key();
            acquired.put(k, ((AcquireResult.Acquired) join(store.acquire(k, fp("a"), LEASE))).fencingToken());
        }
        String stale = key();
        long staleToken = ((AcquireResult.Acquired) join(store.acquire(stale, fp("a"), LEASE))).fencingToken();
        long before = store.completeBatches();
        List<CompletableFuture<Boolean>> done = new ArrayList<>();
        CompletableFuture<Boolean> wrongToken;
        try (Held h = new Held(key())) {
            acquired.forEach((k, token) -> done.add(store.complete(k, token, response(k, done.size()), Duration.ofHours(1))
                .toCompletableFuture()));
            wrongToken = store.complete(stale, staleToken + 1000, new StoredResponse(200, Map.of(), new byte[0], false),
                Duration.ofHours(1)).toCompletableFuture();
            assertThat(done).noneMatch(CompletableFuture::isDone);
        }
        assertThat(done.stream().map(GroupCommitTest::join)).containsOnly(true);
        assertThat(join(wrongToken)).isFalse();
        assertThat(store.completeBatches() - before).isEqualTo(1);
        assertThat(writers(new ArrayList<>(acquired.keySet()))).hasSize(1);
        int shape = 0;
        for (String k : acquired.keySet()) {
            AcquireResult replay = join(store.acquire(k, fp("a"), LEASE));
            assertThat(((AcquireResult.Replay) replay).response()).isEqualTo(response(k, shape++));
        }
        assertThat(join(store.acquire(stale, fp("a"), LEASE))).isInstanceOf(AcquireResult.InProgress.class);
        // every record's retention ends one hour after the store's "now"
        try (Connection c = pool.getConnection(); PreparedStatement ps = c.prepareStatement("SELECT DISTINCT expires_at"
            + " FROM " + SCHEMA + ".idempotency_records WHERE store_key = ANY(?)")) {
            ps.setArray(1, c.createArrayOf("bytea", acquired.keySet().stream().map(StoreKeys::encode).toArray(byte[][]::new)));
            try (ResultSet rs = ps.executeQuery()) {
                assertThat(rs.next()).isTrue();
                assertThat(rs.getObject(1, java.time.OffsetDateTime.class).toInstant())
                    .isEqualTo(clock.instant().plus(Duration.ofHours(1)));
                assertThat(rs.next()).isFalse();
            }
        }
    }

    /** Responses of every shape a batch must keep apart: no headers, several, repeated values, binary, omitted. */
    private static StoredResponse response(String key, int shape) {
        byte[] body = ("body of " + key).getBytes(StandardCharsets.UTF_8);
        return switch (shape % 4) {
            case 0 -> new StoredResponse(201, Map.of(), body, false);
            case 1 -> new StoredResponse(200, new java.util.LinkedHashMap<>(Map.of("Content-Type", List.of("text/plain"),
                "Link", List.of("<a>; rel=\"x\"", "<b>; rel=\"{y}\""))), body, false);
            case 2 -> new StoredResponse(409, Map.of("ETag", List.of("\"v\\1\"")), new byte[] {0, (byte) 0xff, 10, 0}, false);
            default -> new StoredResponse(200, Map.of("Content-Type", List.of("application/json")), new byte[0], true);
        };
    }

    @Test
    @DisplayName("S12/S17: a batch naming one key twice completes it once: the stale holder is refused, the current stored")
    void completionsOfOneKeyInOneBatch() throws Exception {
        String k = key();
        long first = ((AcquireResult.Acquired) join(store.acquire(k, fp("a"), LEASE))).fencingToken();
        String other = key();
        long otherToken = ((AcquireResult.Acquired) join(store.acquire(other, fp("a"), LEASE))).fencingToken();
        long before = store.completeBatches();
        CompletableFuture<Boolean> stale;
        CompletableFuture<Boolean> current;
        CompletableFuture<Boolean> again;
        CompletableFuture<Boolean> second;
        try (Held h = new Held(key())) {
            stale = store.complete(k, first - 1, response("stale", 0), Duration.ofHours(1)).toCompletableFuture();
            current = store.complete(k, first, response("current", 1), Duration.ofHours(1)).toCompletableFuture();
            again = store.complete(k, first, response("again", 2), Duration.ofHours(1)).toCompletableFuture();
            second = store.complete(other, otherToken, response("other", 3), Duration.ofHours(1)).toCompletableFuture();
        }
        assertThat(join(stale)).isFalse();
        assertThat(join(current)).isTrue();
        assertThat(join(again)).isFalse(); // already completed by the call before it
        assertThat(join(second)).isTrue();
        assertThat(store.completeBatches() - before).isEqualTo(1);
        assertThat(((AcquireResult.Replay) join(store.acquire(k, fp("a"), LEASE))).response()).isEqualTo(response("current", 1));
    }

    @Test
    @DisplayName("S11/S17: a record another transaction holds past lock-timeout fails its batch, which then decides"
        + " each call alone: the held key is in progress, the others are acquired")
    void heldRecordDoesNotFailTheOthers() throws Exception {
        store.close();
        store = store(Duration.ofMillis(300));
        join(store.acquire(key(), fp("warm-up"), LEASE));
        String held = key();
        String x = key();
        String y = key();
        CompletableFuture<AcquireResult> rx;
        CompletableFuture<AcquireResult> rh;
        CompletableFuture<AcquireResult> ry;
        try (Held h = new Held(held)) {
            rx = store.acquire(x, fp("a"), LEASE).toCompletableFuture();
            rh = store.acquire(held, fp("a"), LEASE).toCompletableFuture();
            ry = store.acquire(y, fp("a"), LEASE).toCompletableFuture();
            assertThat(join(h.waiting)).isInstanceOf(AcquireResult.InProgress.class);
            assertThat(join(rx)).isInstanceOf(AcquireResult.Acquired.class);
            assertThat(join(rh)).isInstanceOf(AcquireResult.InProgress.class);
            assertThat(join(ry)).isInstanceOf(AcquireResult.Acquired.class);
        }
        assertThat(join(store.acquire(x, fp("a"), LEASE))).isInstanceOf(AcquireResult.InProgress.class);
    }

    @Test
    @DisplayName("S13/S17: replays of one key that queue together are answered from one read, and write nothing")
    void replaysOfAHotKeyReadOnce() throws Exception {
        String hot = key();
        long token = ((AcquireResult.Acquired) join(store.acquire(hot, fp("a"), LEASE))).fencingToken();
        assertThat(join(store.complete(hot, token, new StoredResponse(200, Map.of(), fp("stored"), false),
            Duration.ofHours(1)))).isTrue();
        List<String> writer = writers(List.of(hot));
        List<CompletableFuture<AcquireResult>> replays = new ArrayList<>();
        try (Held h = new Held(key())) {
            for (int i = 0; i < 16; i++) {
                replays.add(store.acquire(hot, fp(i == 7 ? "other" : "a"), LEASE).toCompletableFuture());
            }
        }
        List<AcquireResult> answers = replays.stream().map(GroupCommitTest::join).toList();
        assertThat(answers.get(7)).isInstanceOf(AcquireResult.Mismatch.class);
        assertThat(answers.stream().filter(a -> a instanceof AcquireResult.Replay).collect(Collectors.toList()))
            .hasSize(15)
            .allSatisfy(a -> assertThat(((AcquireResult.Replay) a).response().body()).isEqualTo(fp("stored")));
        assertThat(writers(List.of(hot))).isEqualTo(writer);
    }
}
