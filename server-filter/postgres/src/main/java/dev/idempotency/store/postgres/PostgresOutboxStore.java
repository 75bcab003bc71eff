package dev.idempotency.store.postgres;

import dev.idempotency.messaging.InMemoryOutboxStore;
import dev.idempotency.messaging.OutboxConfigurationProperties;
import dev.idempotency.messaging.OutboxException;
import dev.idempotency.messaging.OutboxRecord;
import dev.idempotency.messaging.OutboxStore;
import dev.idempotency.server.store.IdempotencyStoreException;
import io.micronaut.context.annotation.Replaces;
import io.micronaut.context.annotation.Requires;
import io.micronaut.transaction.TransactionOperations;
import io.micronaut.transaction.TransactionStatus;
import jakarta.inject.Singleton;

import java.sql.Array;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Timestamp;
import java.time.Duration;
import java.time.Instant;
import java.time.OffsetDateTime;
import java.time.ZoneOffset;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;

/**
 * The transactional outbox on PostgreSQL (CONTRACT M3): it replaces the in-memory outbox store
 * when the PostgreSQL idempotency store is enabled and the application uses
 * {@code idempotency-messaging}.
 *
 * <h2>Transaction</h2>
 * {@link #append} joins the transaction in progress on the store's datasource (Micronaut Data's
 * transaction manager): in transactional mode that is the request's transaction, which holds the
 * idempotency record and the handler's business rows, so the message commits or rolls back with
 * them. Without a transaction in progress it commits on its own. A message id that is in the
 * outbox already is kept once ({@code ON CONFLICT DO NOTHING}).
 *
 * <h2>Layout</h2>
 * Table {@code <table>_outbox} (created by the store's migration {@code V2}): {@code id}
 * (bigserial, the publish order), {@code message_id} (unique), {@code ordering_key},
 * {@code destination}, {@code routing_key}, {@code content_type}, {@code headers} (text[],
 * name and value alternating), {@code body} (bytea), {@code attempts}, {@code retry_at} (null
 * until a send failed), {@code parked} and {@code last_error}, {@code created_at}. A confirmed
 * message is deleted; a parked one stays, with its reason, for an operator. Table
 * {@code <table>_outbox_relay} holds the relay lease: one row, its owner and its end.
 *
 * <h2>Reading</h2>
 * {@link #due} takes, per ordering key, the earliest message not parked, and keeps those that are
 * due ({@code DISTINCT ON (ordering_key) ... ORDER BY ordering_key, id} over a partial index).
 * It reads what is committed; a message committed after one with a higher id of the same key is
 * sent after it: per key, messages go in commit order, and in publish order within a transaction.
 * There is no cursor, so no committed message is ever skipped.
 */
@Singleton
@Replaces(InMemoryOutboxStore.class)
@Requires(classes = OutboxStore.class)
@Requires(condition = PostgresStoreSelected.class)
@Requires(property = OutboxConfigurationProperties.PREFIX + ".enabled", notEquals = "false")
public final class PostgresOutboxStore implements OutboxStore {

    private static final String RELAY = "relay";

    private final PostgresIdempotencyStore store;
    private final String outbox;
    private final String relay;

    PostgresOutboxStore(PostgresIdempotencyStore store) {
        this.store = store;
        this.outbox = store.table() + "_outbox";
        this.relay = store.table() + "_outbox_relay";
    }

    @Override
    public boolean append(OutboxRecord m) {
        TransactionOperations<Connection> tx;
        try {
            store.ensureMigrated();
            tx = store.transactions();
        } catch (IdempotencyStoreException e) {
            throw new OutboxException("the outbox table is not there: " + e.getMessage(), e);
        }
        Optional<? extends TransactionStatus<?>> current = tx.findTransactionStatus();
        try {
            if (current.isPresent() && current.get().getConnection() instanceof Connection c) {
                return insert(c, m);
            }
            return tx.executeWrite(status -> {
                try {
                    return insert(status.getConnection(), m);
                } catch (SQLException e) {
                    throw new OutboxException("the message could not be stored: " + e.getMessage(), e);
                }
            });
        } catch (SQLException e) {
            throw new OutboxException("the message could not be stored: " + e.getMessage(), e);
        }
    }

    private boolean insert(Connection c, OutboxRecord m) throws SQLException {
        try (PreparedStatement ps = c.prepareStatement("INSERT INTO " + outbox + " (message_id, ordering_key, destination,"
            + " routing_key, content_type, headers, body, created_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?)"
            + " ON CONFLICT (message_id) DO NOTHING")) {
            ps.setString(1, m.messageId());
            ps.setString(2, m.orderingKey());
            ps.setString(3, m.destination());
            ps.setString(4, m.routingKey());
            ps.setString(5, m.contentType());
            ps.setArray(6, c.createArrayOf("text", flatten(m.headers())));
            ps.setBytes(7, m.body());
            ps.setObject(8, OffsetDateTime.ofInstant(m.createdAt(), ZoneOffset.UTC));
            return ps.executeUpdate() == 1;
        }
    }

    @Override
    public List<OutboxRecord> due(int max, Instant now) {
        return autocommit("read the outbox", c -> {
            try (PreparedStatement ps = c.prepareStatement("SELECT id, message_id, ordering_key, destination, routing_key,"
                + " content_type, headers, body, attempts, created_at FROM (SELECT DISTINCT ON (ordering_key) * FROM "
                + outbox + " WHERE NOT parked ORDER BY ordering_key, id) h WHERE retry_at IS NULL OR retry_at <= ?"
                + " ORDER BY id LIMIT ?")) {
                ps.setObject(1, OffsetDateTime.ofInstant(now, ZoneOffset.UTC));
                ps.setInt(2, max);
                List<OutboxRecord> due = new ArrayList<>();
                try (ResultSet rs = ps.executeQuery()) {
                    while (rs.next()) {
                        due.add(new OutboxRecord(rs.getLong(1), rs.getString(2), rs.getString(3), rs.getString(4),
                            rs.getString(5), rs.getString(6), unflatten(rs.getArray(7)), rs.getBytes(8), rs.getInt(9),
                            rs.getObject(10, OffsetDateTime.class).toInstant()));
                    }
                }
                return due;
            }
        });
    }

    @Override
    public void sent(List<Long> ids) {
        autocommit("forget sent messages", c -> {
            try (PreparedStatement ps = c.prepareStatement("DELETE FROM " + outbox + " WHERE id = ANY(?)")) {
                ps.setArray(1, c.createArrayOf("int8", ids.toArray()));
                return ps.executeUpdate();
            }
        });
    }

    @Override
    public void failed(long id, String reason, Instant retryAt) {
        autocommit("record a failed send", c -> {
            try (PreparedStatement ps = c.prepareStatement("UPDATE " + outbox + " SET attempts = attempts + 1,"
                + " retry_at = ?, last_error = ? WHERE id = ?")) {
                ps.setObject(1, OffsetDateTime.ofInstant(retryAt, ZoneOffset.UTC));
                ps.setString(2, reason);
                ps.setLong(3, id);
                return ps.executeUpdate();
            }
        });
    }

    @Override
    public void park(long id, String reason) {
        autocommit("park a message", c -> {
            try (PreparedStatement ps = c.prepareStatement("UPDATE " + outbox + " SET parked = true, attempts = attempts + 1,"
                + " last_error = ? WHERE id = ?")) {
                ps.setString(1, reason);
                ps.setLong(2, id);
                return ps.executeUpdate();
            }
        });
    }

    @Override
    public long depth() {
        return autocommit("count the outbox", c -> {
            try (PreparedStatement ps = c.prepareStatement("SELECT count(*) FROM " + outbox + " WHERE NOT parked");
                 ResultSet rs = ps.executeQuery()) {
                rs.next();
                return rs.getLong(1);
            }
        });
    }

    @Override
    public Duration lag(Instant now) {
        return autocommit("read the outbox's lag", c -> {
            try (PreparedStatement ps = c.prepareStatement("SELECT min(created_at) FROM " + outbox + " WHERE NOT parked");
                 ResultSet rs = ps.executeQuery()) {
                rs.next();
                Timestamp oldest = rs.getTimestamp(1);
                if (oldest == null) {
                    return Duration.ZERO;
                }
                Duration d = Duration.between(oldest.toInstant(), now);
                return d.isNegative() ? Duration.ZERO : d;
            }
        });
    }

    @Override
    public boolean relayLease(String owner, Duration lease, Instant now) {
        return autocommit("take the relay lease", c -> {
            try (PreparedStatement ps = c.prepareStatement("INSERT INTO " + relay + " (name, owner, expires_at)"
                + " VALUES (?, ?, ?) ON CONFLICT (name) DO UPDATE SET owner = EXCLUDED.owner,"
                + " expires_at = EXCLUDED.expires_at WHERE " + relay + ".owner = EXCLUDED.owner OR "
                + relay + ".expires_at <= ? RETURNING owner")) {
                ps.setString(1, RELAY);
                ps.setString(2, owner);
                ps.setObject(3, OffsetDateTime.ofInstant(now.plus(lease), ZoneOffset.UTC));
                ps.setObject(4, OffsetDateTime.ofInstant(now, ZoneOffset.UTC));
                try (ResultSet rs = ps.executeQuery()) {
                    return rs.next();
                }
            }
        });
    }

    /** @return the parked messages with their reasons: message id to last error (for operators and tests) */
    public Map<String, String> parked() {
        return autocommit("read parked messages", c -> {
            try (PreparedStatement ps = c.prepareStatement("SELECT message_id, last_error FROM " + outbox
                + " WHERE parked ORDER BY id"); ResultSet rs = ps.executeQuery()) {
                Map<String, String> parked = new LinkedHashMap<>();
                while (rs.next()) {
                    parked.put(rs.getString(1), rs.getString(2));
                }
                return parked;
            }
        });
    }

    @FunctionalInterface
    private interface Work<T> {
        T run(Connection c) throws SQLException;
    }

    private <T> T autocommit(String what, Work<T> work) {
        try {
            store.ensureMigrated();
            try (Connection c = store.connection()) {
                if (!c.getAutoCommit()) {
                    c.setAutoCommit(true);
                }
                return work.run(c);
            }
        } catch (SQLException | IdempotencyStoreException e) {
            throw new OutboxException("PostgreSQL outbox: cannot " + what + ": " + e.getMessage(), e);
        }
    }

    private static String[] flatten(Map<String, String> headers) {
        String[] flat = new String[headers.size() * 2];
        int i = 0;
        for (Map.Entry<String, String> e : headers.entrySet()) {
            flat[i++] = e.getKey();
            flat[i++] = e.getValue();
        }
        return flat;
    }

    private static Map<String, String> unflatten(Array array) throws SQLException {
        String[] flat = (String[]) array.getArray();
        Map<String, String> headers = new LinkedHashMap<>();
        for (int i = 0; i + 1 < flat.length; i += 2) {
            headers.put(flat[i], flat[i + 1]);
        }
        return headers;
    }
}
