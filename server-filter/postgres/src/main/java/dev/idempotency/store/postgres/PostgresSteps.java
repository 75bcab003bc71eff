package dev.idempotency.store.postgres;

import dev.idempotency.server.Checks;

import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.time.Duration;
import java.time.Instant;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.Objects;
import java.util.concurrent.CompletionStage;

/**
 * Durable steps (CONTRACT S23): rows of the steps table keyed by record and step name, written
 * only while the writer still holds the record with its fencing token.
 */
final class PostgresSteps {

    private final PostgresIdempotencyStore store;

    PostgresSteps(PostgresIdempotencyStore store) {
        this.store = store;
    }

    /** One indexed read of {@code <table>_steps}. */
    CompletionStage<Map<String, byte[]>> steps(String storeKey) {
        Objects.requireNonNull(storeKey, "storeKey");
        return store.executors.statement("steps", () -> store.autocommit("steps", c -> {
            try (PreparedStatement ps = store.prepare(c, store.sql.steps)) {
                ps.setBytes(1, StoreKeys.encode(storeKey));
                ps.setObject(2, PostgresIdempotencyStore.timestamp(store.now()));
                Map<String, byte[]> found = new LinkedHashMap<>();
                try (ResultSet rs = ps.executeQuery()) {
                    while (rs.next()) {
                        found.put(rs.getString(1), rs.getBytes(2));
                    }
                }
                return found;
            }
        }));
    }

    /** One statement: the step's row, inserted only while the holder's token holds its in-progress record. */
    CompletionStage<Boolean> recordStep(String storeKey, long fencingToken, String step, byte[] result,
                                               Duration keep) {
        Objects.requireNonNull(storeKey, "storeKey");
        Objects.requireNonNull(step, "step");
        Objects.requireNonNull(result, "result");
        Checks.positive(keep, "keep");
        return store.executors.statement("recordStep", () -> store.autocommit("recordStep",
            c -> recordStep(c, storeKey, fencingToken, step, result, keep)));
    }

    boolean recordStep(Connection c, String storeKey, long fencingToken, String step, byte[] result, Duration keep)
        throws SQLException {
        Instant now = store.now();
        try (PreparedStatement ps = store.prepare(c, store.sql.recordStep)) {
            ps.setString(1, step);
            ps.setBytes(2, result);
            ps.setObject(3, PostgresIdempotencyStore.timestamp(now));
            ps.setObject(4, PostgresIdempotencyStore.timestamp(now.plus(keep)));
            ps.setBytes(5, StoreKeys.encode(storeKey));
            ps.setLong(6, fencingToken);
            try (ResultSet rs = ps.executeQuery()) {
                return rs.next();
            }
        }
    }

    CompletionStage<Boolean> discardSteps(String storeKey, long fencingToken) {
        Objects.requireNonNull(storeKey, "storeKey");
        return store.executors.statement("discardSteps", () -> store.autocommit("discardSteps", c -> {
            byte[] key = StoreKeys.encode(storeKey);
            try (PreparedStatement ps = store.prepare(c, store.sql.discardSteps)) {
                ps.setBytes(1, key);
                ps.setLong(2, fencingToken);
                ps.setBytes(3, key);
                try (ResultSet rs = ps.executeQuery()) {
                    return rs.next() && rs.getLong(1) > 0;
                }
            }
        }));
    }
}
