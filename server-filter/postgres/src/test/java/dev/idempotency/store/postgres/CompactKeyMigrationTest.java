package dev.idempotency.store.postgres;

import com.zaxxer.hikari.HikariDataSource;
import dev.idempotency.server.store.AcquireResult;
import dev.idempotency.server.store.RecordInfo;
import dev.idempotency.testsupport.MutableClock;
import dev.idempotency.testsupport.TestPostgres;
import org.flywaydb.core.Flyway;
import org.junit.jupiter.api.DisplayName;
import org.junit.jupiter.api.Test;

import java.nio.charset.StandardCharsets;
import java.security.MessageDigest;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.Statement;
import java.time.Duration;
import java.time.Instant;
import java.time.OffsetDateTime;
import java.time.ZoneOffset;
import java.util.HexFormat;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * Issue 13: the V3 migration turns {@code store_key} into bytea and sets fillfactor 100 on a table
 * that already holds records, converting each key exactly as {@link StoreKeys} encodes it, so
 * every record written before the upgrade is still found, replayed and fenced after it.
 */
class CompactKeyMigrationTest {

    private static final byte[] FINGERPRINT = {2, 1, 2, 3};

    @Test
    @DisplayName("S17: keys are 32 bytes for the filter's hashes and round-trip exactly for any other key")
    void keyEncoding() throws Exception {
        String hash = HexFormat.of().formatHex(MessageDigest.getInstance("SHA-256").digest(new byte[1]));
        assertThat(StoreKeys.encode(hash)).hasSize(32);
        for (String key : List.of(hash, hash.toUpperCase(), "", "k", "x".repeat(31), "x".repeat(32), "ü".repeat(15) + "x",
            "ü".repeat(16), "a".repeat(64) + "0", "0".repeat(63))) {
            byte[] encoded = StoreKeys.encode(key);
            assertThat(StoreKeys.decode(encoded)).as(key).isEqualTo(key);
            if (!key.equals(hash)) {
                assertThat(encoded.length).as(key).isNotEqualTo(32);
            }
        }
    }

    @Test
    @DisplayName("S17/S16: records written before the V3 migration are found, replayed and fenced after it")
    void recordsSurviveTheMigration() throws Exception {
        String schema = TestPostgres.newSchema();
        try (HikariDataSource pool = TestPostgres.pool(TestPostgres.server(), 4)) {
            // the table as the previous release left it: migrations V1 and V2 only
            Flyway.configure(PostgresSchemaMigrator.class.getClassLoader()).dataSource(pool)
                .locations(PostgresSchemaMigrator.LOCATION).table("idempotency_records_schema_history")
                .placeholders(Map.of("table", schema + ".idempotency_records", "table_name", "idempotency_records"))
                .baselineOnMigrate(true).baselineVersion("0").schemas(schema).createSchemas(true)
                .target("2").load().migrate();
            String hash = HexFormat.of().formatHex(MessageDigest.getInstance("SHA-256")
                .digest("before".getBytes(StandardCharsets.UTF_8)));
            List<String> keys = List.of(hash, "legacy-key", "y".repeat(31), "in-progress-" + hash.substring(0, 8));
            Instant now = Instant.parse("2026-01-01T00:00:00Z");
            try (Connection c = pool.getConnection(); PreparedStatement ps = c.prepareStatement("INSERT INTO " + schema
                + ".idempotency_records (store_key, fingerprint, fencing_token, holder, completed, acquired_at,"
                + " expires_at, response_status, response_headers, response_body, body_omitted)"
                + " VALUES (?, ?, ?, 1, ?, ?, ?, ?, ?, ?, ?)")) {
                long token = 100;
                for (String key : keys) {
                    boolean completed = !key.startsWith("in-progress-");
                    ps.setString(1, key);
                    ps.setBytes(2, FINGERPRINT);
                    ps.setLong(3, token++);
                    ps.setBoolean(4, completed);
                    ps.setObject(5, OffsetDateTime.ofInstant(now, ZoneOffset.UTC));
                    ps.setObject(6, OffsetDateTime.ofInstant(now.plus(Duration.ofHours(1)), ZoneOffset.UTC));
                    if (completed) {
                        ps.setInt(7, 201);
                        ps.setArray(8, c.createArrayOf("text", new String[] {"Content-Type", "1", "application/json"}));
                        ps.setBytes(9, ("{\"key\":\"" + key + "\"}").getBytes(StandardCharsets.UTF_8));
                        ps.setBoolean(10, false);
                    } else {
                        ps.setNull(7, java.sql.Types.SMALLINT);
                        ps.setNull(8, java.sql.Types.ARRAY);
                        ps.setNull(9, java.sql.Types.BINARY);
                        ps.setNull(10, java.sql.Types.BOOLEAN);
                    }
                    ps.executeUpdate();
                }
            }

            PostgresStoreConfigurationProperties config = new PostgresStoreConfigurationProperties();
            config.setEnabled(true);
            config.setSchema(schema);
            MutableClock clock = new MutableClock(now.plusSeconds(60));
            PostgresIdempotencyStore store = new PostgresIdempotencyStore(config, clock, () -> pool, () -> {
                throw new UnsupportedOperationException("no transactions in this test");
            });
            try {
                for (String key : keys.subList(0, 3)) { // migrated on the first call
                    AcquireResult r = store.acquire(key, FINGERPRINT, Duration.ofSeconds(30)).toCompletableFuture()
                        .get(30, TimeUnit.SECONDS);
                    assertThat(r).as(key).isInstanceOfSatisfying(AcquireResult.Replay.class, replay -> assertThat(
                        new String(replay.response().body(), StandardCharsets.UTF_8)).isEqualTo("{\"key\":\"" + key + "\"}"));
                    assertThat(store.find(key).toCompletableFuture().get(30, TimeUnit.SECONDS)).as(key)
                        .hasValueSatisfying(info -> assertThat(info.storeKey()).isEqualTo(key));
                }
                String running = keys.get(3);
                RecordInfo held = store.find(running).toCompletableFuture().get(30, TimeUnit.SECONDS).orElseThrow();
                assertThat(held.state()).isEqualTo(RecordInfo.State.IN_PROGRESS);
                assertThat(store.acquire(running, FINGERPRINT, Duration.ofSeconds(30)).toCompletableFuture()
                    .get(30, TimeUnit.SECONDS)).isInstanceOf(AcquireResult.InProgress.class);
                assertThat(store.release(running, held.fencingToken() + 1).toCompletableFuture().get(30, TimeUnit.SECONDS))
                    .as("a wrong token is still fenced out").isFalse();
                assertThat(store.release(running, held.fencingToken()).toCompletableFuture().get(30, TimeUnit.SECONDS))
                    .isTrue();
            } finally {
                store.close();
            }
            try (Connection c = pool.getConnection(); Statement s = c.createStatement();
                 ResultSet rs = s.executeQuery("SELECT (SELECT data_type FROM information_schema.columns"
                     + " WHERE table_schema = '" + schema + "' AND table_name = 'idempotency_records'"
                     + " AND column_name = 'store_key'), (SELECT array_to_string(reloptions, ',') FROM pg_class"
                     + " WHERE oid = '" + schema + ".idempotency_records'::regclass),"
                     + " (SELECT octet_length(store_key) FROM " + schema + ".idempotency_records"
                     + " WHERE store_key = decode('" + hash + "', 'hex'))")) {
                rs.next();
                assertThat(rs.getString(1)).isEqualTo("bytea");
                assertThat(rs.getString(2)).contains("fillfactor=100");
                assertThat(rs.getInt(3)).isEqualTo(32);
            }
        } finally {
            TestPostgres.dropSchema(schema);
        }
    }
}
