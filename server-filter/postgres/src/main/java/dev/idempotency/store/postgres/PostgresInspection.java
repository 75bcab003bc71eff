package dev.idempotency.store.postgres;

import dev.idempotency.server.Checks;
import dev.idempotency.server.store.IdempotencyStoreException;
import dev.idempotency.server.store.RecordCounts;
import dev.idempotency.server.store.RecordInfo;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.time.Instant;
import java.time.OffsetDateTime;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Optional;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;

/**
 * The store's answers to an operator (CONTRACT O3) and its autovacuum check: reads on a store
 * thread and an autocommitted connection, each bounded by {@value #INSPECTION_TIMEOUT_SECONDS} s.
 */
final class PostgresInspection {

    private static final Logger LOG = LoggerFactory.getLogger(PostgresIdempotencyStore.class);

    private final PostgresIdempotencyStore store;

    PostgresInspection(PostgresIdempotencyStore store) {
        this.store = store;
    }

    /** How long an operator's inspection query may run (CONTRACT O3). */
    static final int INSPECTION_TIMEOUT_SECONDS = 60;

    /**
     * Counts with one pass over the table (a sequential scan: about a second per few million
     * rows), with the table's and its indexes' size, on a store thread and connection, bounded by
     * {@value #INSPECTION_TIMEOUT_SECONDS} s.
     */
    CompletionStage<RecordCounts> counts() {
        return inspect("count", c -> {
            try (PreparedStatement ps = c.prepareStatement("SELECT"
                + " count(*) FILTER (WHERE NOT completed AND expires_at > ?),"
                + " count(*) FILTER (WHERE NOT completed AND expires_at <= ?),"
                + " count(*) FILTER (WHERE completed AND expires_at > ?),"
                + " count(*) FILTER (WHERE completed AND expires_at <= ?),"
                + " pg_relation_size(CAST(? AS regclass)), pg_indexes_size(CAST(? AS regclass)),"
                + " pg_total_relation_size(CAST(? AS regclass))"
                + " FROM " + store.sql.table)) {
                ps.setQueryTimeout(INSPECTION_TIMEOUT_SECONDS);
                OffsetDateTime now = PostgresIdempotencyStore.timestamp(store.now());
                for (int i = 1; i <= 4; i++) {
                    ps.setObject(i, now);
                }
                for (int i = 5; i <= 7; i++) {
                    ps.setString(i, store.sql.table);
                }
                try (ResultSet rs = ps.executeQuery()) {
                    rs.next();
                    Map<String, Object> size = new LinkedHashMap<>();
                    size.put("table", store.sql.table);
                    size.put("tableBytes", rs.getLong(5));
                    size.put("indexBytes", rs.getLong(6));
                    size.put("totalBytes", rs.getLong(7));
                    return new RecordCounts(rs.getLong(1), rs.getLong(2), rs.getLong(3), rs.getLong(4), true, size);
                }
            }
        });
    }

    /** A pass over the table (no index serves it: the hot path pays for no index of its own). */
    CompletionStage<List<RecordInfo>> inProgressStartedBefore(Instant startedBefore, int limit) {
        Objects.requireNonNull(startedBefore, "startedBefore");
        Checks.atLeast(limit, 1, "limit");
        return inspect("list in progress", c -> {
            try (PreparedStatement ps = c.prepareStatement("SELECT store_key, completed, fencing_token, acquired_at,"
                + " expires_at, response_status, octet_length(response_body), body_omitted FROM " + store.sql.table
                + " WHERE NOT completed AND acquired_at <= ? ORDER BY acquired_at LIMIT ?")) {
                ps.setQueryTimeout(INSPECTION_TIMEOUT_SECONDS);
                ps.setObject(1, PostgresIdempotencyStore.timestamp(startedBefore));
                ps.setInt(2, limit);
                List<RecordInfo> found = new ArrayList<>();
                try (ResultSet rs = ps.executeQuery()) {
                    while (rs.next()) {
                        found.add(recordInfo(rs));
                    }
                }
                return found;
            }
        });
    }

    /** One primary-key lookup; the body's length is read, never the body. */
    CompletionStage<Optional<RecordInfo>> find(String storeKey) {
        Objects.requireNonNull(storeKey, "storeKey");
        return inspect("find", c -> {
            try (PreparedStatement ps = c.prepareStatement("SELECT store_key, completed, fencing_token, acquired_at,"
                + " expires_at, response_status, octet_length(response_body), body_omitted FROM " + store.sql.table
                + " WHERE store_key = ?")) {
                ps.setQueryTimeout(INSPECTION_TIMEOUT_SECONDS);
                ps.setBytes(1, StoreKeys.encode(storeKey));
                try (ResultSet rs = ps.executeQuery()) {
                    return rs.next() ? Optional.of(recordInfo(rs)) : Optional.<RecordInfo>empty();
                }
            }
        });
    }

    static RecordInfo recordInfo(ResultSet rs) throws SQLException {
        boolean completed = rs.getBoolean(2);
        long body = rs.getLong(7);
        return new RecordInfo(StoreKeys.decode(rs.getBytes(1)), completed ? RecordInfo.State.COMPLETED : RecordInfo.State.IN_PROGRESS,
            rs.getLong(3), rs.getObject(4, OffsetDateTime.class).toInstant(), rs.getObject(5, OffsetDateTime.class).toInstant(),
            completed ? rs.getInt(6) : 0, completed && !rs.getBoolean(8) ? body : -1);
    }

    /**
     * An operator's read, on a store thread and an autocommitted connection, with its own longer
     * timeout (each statement's query timeout, and the connection's network timeout).
     */
    <T> CompletionStage<T> inspect(String operation, PostgresIdempotencyStore.SqlWork<T> work) {
        return store.executors.statement(operation, () -> store.autocommit(operation, c -> {
            c.setNetworkTimeout(PostgresIdempotencyStore.SAME_THREAD, (INSPECTION_TIMEOUT_SECONDS + 1) * 1000);
            return work.run(c);
        }));
    }

    /**
     * Whether autovacuum reclaims the space of the rows the purge deletes: when it is off for the
     * server or for the table, the table grows with every record ever written although the purge
     * keeps the live rows few (benchmarks/README.md, "Does the purge keep up").
     *
     * @return the warning to log, or empty when autovacuum is on for the table
     */
    CompletableFuture<Optional<String>> vacuumWarning() {
        return store.executors.statement("autovacuum check", () -> store.autocommit("autovacuum check", c -> {
            try (PreparedStatement ps = c.prepareStatement("SELECT current_setting('autovacuum'),"
                + " (SELECT option_value FROM pg_options_to_table((SELECT reloptions FROM pg_class"
                + " WHERE oid = CAST(? AS regclass))) WHERE option_name = 'autovacuum_enabled')")) {
                ps.setString(1, store.sql.table);
                try (ResultSet rs = ps.executeQuery()) {
                    rs.next();
                    String server = rs.getString(1);
                    String table = rs.getString(2);
                    boolean off = !"on".equals(server) || (table != null && !Boolean.parseBoolean(table));
                    return off ? Optional.of("idempotency PostgreSQL store: autovacuum is off for " + store.sql.table
                        + " (server autovacuum=" + server + ", table autovacuum_enabled=" + (table == null ? "default" : table)
                        + "): the purge deletes expired records, but their space is reused only after a VACUUM, so the"
                        + " table grows with every record written. Turn autovacuum on, or VACUUM " + store.sql.table
                        + " on a schedule") : Optional.<String>empty();
                }
            }
        }));
    }

    /**
     * One read of the table on the statement executor (O2): reachable, and the table present.
     * A missing table fails the probe with what to do.
     */
    CompletionStage<Map<String, Object>> probe() {
        return store.executors.statement("probe", () -> store.autocommit("probe", c -> {
            try (java.sql.Statement s = c.createStatement()) {
                s.setQueryTimeout((int) Math.max(1, store.statementTimeoutMillis / 1000));
                try (ResultSet rs = s.executeQuery("SELECT 1 FROM " + store.sql.table + " LIMIT 1")) {
                    rs.next();
                }
            } catch (SQLException e) {
                if ("42P01".equals(e.getSQLState())) {
                    throw new IdempotencyStoreException("PostgreSQL idempotency store: the table " + store.sql.table
                        + " does not exist; apply the migration db/idempotency (or set "
                        + PostgresStoreConfigurationProperties.PREFIX + ".migrate=true)", e);
                }
                throw e;
            }
            return Map.<String, Object>of("table", store.sql.table, "tablePresent", true);
        }));
    }

    /** Logs the autovacuum warning at startup, if there is one. */
    void logVacuumWarning() {
        vacuumWarning().whenComplete((warning, failure) -> {
            if (warning != null && warning.isPresent()) {
                LOG.warn(warning.get());
            } else if (failure != null) {
                LOG.debug("idempotency PostgreSQL store: could not check autovacuum: {}", failure.toString());
            }
        });
    }
}
