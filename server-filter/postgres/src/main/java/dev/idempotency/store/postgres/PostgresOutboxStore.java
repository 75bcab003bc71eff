package dev.idempotency.store.postgres;

import dev.idempotency.messaging.InMemoryOutboxStore;
import dev.idempotency.messaging.OutboxConfigurationProperties;
import dev.idempotency.messaging.OutboxException;
import dev.idempotency.messaging.OutboxPartitions;
import dev.idempotency.messaging.OutboxRecord;
import dev.idempotency.messaging.OutboxStore;
import dev.idempotency.server.store.IdempotencyStoreException;
import io.micronaut.context.annotation.Replaces;
import io.micronaut.context.annotation.Requires;
import io.micronaut.transaction.TransactionOperations;
import io.micronaut.transaction.TransactionStatus;
import jakarta.inject.Singleton;

import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import java.nio.charset.StandardCharsets;
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
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;

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
 * message is deleted; a parked one stays, with its reason, for an operator. Each message has its
 * {@code relay_partition} (migration {@code V5}). Table {@code <table>_outbox_relay} holds a row
 * per partition ({@code partition:<n>}: its relay and the lease's end), one per live relay
 * ({@code member:<owner>}), the partition count they share ({@code partitions}), and the single
 * relay lease of earlier versions ({@code relay}).
 *
 * <h2>Reading</h2>
 * {@link #due} takes the messages that are due and are the earliest message not parked of their
 * ordering key ({@code NOT EXISTS} an earlier one, a probe of the partial index on
 * {@code (ordering_key, id)}). An instance that relays every partition walks the waiting messages
 * in publish order until the batch is full. One that relays some of them (migration {@code V6})
 * descends the partial index on {@code (relay_partition, id)} once per partition it holds and
 * takes each partition's first such message, so it never walks the backlog of partitions that
 * others relay (with two relays, that walk cost each read 12-20 ms against 0.2 ms); a batch then
 * has at most one message per partition, and the partitions' order turns from read to read.
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

    private static final Logger LOG = LoggerFactory.getLogger(PostgresOutboxStore.class);
    private static final String RELAY = "relay";
    private static final String PARTITIONS = "partitions";
    private static final String PARTITION = "partition:";
    private static final String MEMBER = "member:";
    private static final long NOTIFY_EVERY_NANOS = 2_000_000;

    private final PostgresIdempotencyStore store;
    private final OutboxConfigurationProperties config;
    private final String outbox;
    private final String relay;
    private final String channel;
    private final Set<String> joined = ConcurrentHashMap.newKeySet();
    /** Reads of some partitions so far: where the next one starts among them. */
    private final java.util.concurrent.atomic.AtomicLong partitionReads = new java.util.concurrent.atomic.AtomicLong();
    private final java.util.concurrent.atomic.AtomicLong lastNotify = new java.util.concurrent.atomic.AtomicLong(
        System.nanoTime() - NOTIFY_EVERY_NANOS);

    PostgresOutboxStore(PostgresIdempotencyStore store, OutboxConfigurationProperties config) {
        this.store = store;
        this.config = config;
        this.outbox = store.sql.table + "_outbox";
        this.relay = store.sql.table + "_outbox_relay";
        this.channel = channelOf(outbox);
    }

    /** A NOTIFY channel per outbox table, short enough for any schema name (identifiers end at 63 bytes). */
    private static String channelOf(String table) {
        try {
            byte[] d = java.security.MessageDigest.getInstance("SHA-256").digest(table.getBytes(StandardCharsets.UTF_8));
            return "idempotency_outbox_" + java.util.HexFormat.of().formatHex(d, 0, 8);
        } catch (java.security.NoSuchAlgorithmException e) {
            throw new IllegalStateException(e);
        }
    }

    /**
     * Whether this append NOTIFYs: at most one per {@value #NOTIFY_EVERY_NANOS} ns on this instance.
     * PostgreSQL serializes the commits of notifying transactions (one queue lock), so a NOTIFY per
     * publish would slow every publish at a high rate; a relay woken by one looks again shortly after
     * its pass for the messages published right behind it.
     */
    private boolean notifySlot() {
        long now = System.nanoTime();
        long last = lastNotify.get();
        return now - last >= NOTIFY_EVERY_NANOS && lastNotify.compareAndSet(last, now);
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
        String insert = "INSERT INTO " + outbox + " (message_id, ordering_key, destination, routing_key, content_type,"
            + " headers, body, created_at, relay_partition) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)"
            + " ON CONFLICT (message_id) DO NOTHING";
        boolean notify = config.isNotify() && notifySlot();
        // with wake-ups, the NOTIFY rides on the INSERT (one round trip); PostgreSQL sends it at commit, once per
        // transaction and partition
        try (PreparedStatement ps = c.prepareStatement(notify ? "WITH ins AS (" + insert + " RETURNING relay_partition)"
            + " SELECT pg_notify(?, relay_partition::text) FROM ins" : insert)) {
            ps.setString(1, m.messageId());
            ps.setString(2, m.orderingKey());
            ps.setString(3, m.destination());
            ps.setString(4, m.routingKey());
            ps.setString(5, m.contentType());
            ps.setArray(6, c.createArrayOf("text", flatten(m.headers())));
            ps.setBytes(7, m.body());
            ps.setObject(8, OffsetDateTime.ofInstant(m.createdAt(), ZoneOffset.UTC));
            ps.setInt(9, OutboxPartitions.of(m.orderingKey(), config.getPartitions()));
            if (!notify) {
                return ps.executeUpdate() == 1;
            }
            ps.setString(10, channel);
            try (ResultSet rs = ps.executeQuery()) {
                return rs.next();
            }
        }
    }

    @Override
    public List<OutboxRecord> due(int max, Instant now) {
        return due(max, now, null);
    }

    @Override
    public List<OutboxRecord> due(int max, Instant now, Set<Integer> partitions) {
        if (partitions == null || partitions.size() >= config.getPartitions()) {
            return dueEverywhere(max, now);
        }
        if (partitions.isEmpty()) {
            return List.of();
        }
        // each partition's earliest message, when it is its key's earliest waiting one and due: a descent of the
        // (relay_partition, id) index per partition, stopping at the first such message, so that an instance never
        // walks the messages of partitions others relay. One message per partition and read: going on to a
        // partition's second key would walk, in a partition with fewer keys than the batch, every message behind
        // its heads. The partitions are taken in an order that turns from read to read, so that a batch smaller than
        // the partitions leaves none behind for long
        List<Integer> order = new ArrayList<>(partitions);
        order.sort(null);
        java.util.Collections.rotate(order, -(int) (partitionReads.getAndIncrement() % order.size()));
        return autocommit("read the outbox", c -> {
            try (PreparedStatement ps = c.prepareStatement("SELECT w.id, w.message_id, w.ordering_key, w.destination,"
                + " w.routing_key, w.content_type, w.headers, w.body, w.attempts, w.created_at FROM unnest(?::int4[])"
                + " WITH ORDINALITY p(n, turn) CROSS JOIN LATERAL (SELECT o.* FROM " + outbox + " o WHERE"
                + " o.relay_partition = p.n AND NOT o.parked AND (o.retry_at IS NULL OR o.retry_at <= ?) AND NOT EXISTS"
                + " (SELECT 1 FROM " + outbox + " e WHERE e.ordering_key = o.ordering_key AND e.id < o.id AND NOT"
                + " e.parked) ORDER BY o.id LIMIT 1) w ORDER BY p.turn LIMIT ?")) {
                ps.setArray(1, c.createArrayOf("int4", order.toArray()));
                ps.setObject(2, OffsetDateTime.ofInstant(now, ZoneOffset.UTC));
                ps.setInt(3, max);
                return records(ps);
            }
        });
    }

    private static List<OutboxRecord> records(PreparedStatement ps) throws SQLException {
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

    /** The read of an instance that relays every partition: one walk of the primary key, in publish order. */
    private List<OutboxRecord> dueEverywhere(int max, Instant now) {
        return autocommit("read the outbox", c -> {
            // in publish order, the messages that are their key's earliest waiting one, wherever that one lies (a key
            // whose messages span partitions, published under another partition count, still goes in order): a walk
            // of the primary key that stops at the batch, one index probe per row
            try (PreparedStatement ps = c.prepareStatement("SELECT id, message_id, ordering_key, destination, routing_key,"
                + " content_type, headers, body, attempts, created_at FROM " + outbox + " o WHERE NOT o.parked"
                + " AND (o.retry_at IS NULL OR o.retry_at <= ?) AND NOT EXISTS (SELECT 1 FROM " + outbox + " e"
                + " WHERE e.ordering_key = o.ordering_key AND e.id < o.id AND NOT e.parked) ORDER BY o.id LIMIT ?")) {
                ps.setObject(1, OffsetDateTime.ofInstant(now, ZoneOffset.UTC));
                ps.setInt(2, max);
                return records(ps);
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

    @Override
    public Set<Integer> claim(String owner, int partitions, Duration lease, Instant now) {
        return autocommit("claim relay partitions", c -> {
            OffsetDateTime at = OffsetDateTime.ofInstant(now, ZoneOffset.UTC);
            OffsetDateTime until = OffsetDateTime.ofInstant(now.plus(lease), ZoneOffset.UTC);
            if (!joined.contains(owner)) {
                join(c, owner, partitions, at);
                joined.add(owner);
            }
            // this instance is alive; the others that are
            update(c, "INSERT INTO " + relay + " (name, owner, expires_at) VALUES (?, ?, ?) ON CONFLICT (name)"
                + " DO UPDATE SET owner = EXCLUDED.owner, expires_at = EXCLUDED.expires_at", MEMBER + owner, owner, until);
            update(c, "DELETE FROM " + relay + " WHERE name LIKE 'member:%' AND expires_at <= ?",
                OffsetDateTime.ofInstant(now.minus(lease), ZoneOffset.UTC));
            // the share: partitions / members, one more for the first partitions % members members by name, so the
            // shares add up to the partitions exactly and every instance agrees on each one's
            long[] rank = rank(c, owner, at);
            int members = (int) Math.max(1, rank[1]);
            int share = partitions / members + (rank[0] < partitions % members ? 1 : 0);
            // renew what it holds
            List<Integer> held = partitionsOf(c, "UPDATE " + relay + " SET expires_at = ? WHERE name LIKE 'partition:%'"
                + " AND owner = ? RETURNING name", until, owner);
            held.sort(null);
            if (held.size() > share) { // give back the surplus, for the instances that joined
                List<Integer> surplus = new ArrayList<>(held.subList(share, held.size()));
                held.removeAll(surplus);
                update(c, "DELETE FROM " + relay + " WHERE name = ANY(?) AND owner = ?", names(c, surplus), owner);
            } else if (held.size() < share) { // take free and expired ones, up to the share
                List<Integer> free = partitionsOf(c, "SELECT 'partition:' || g FROM generate_series(0, ?) g WHERE NOT"
                    + " EXISTS (SELECT 1 FROM " + relay + " r WHERE r.name = 'partition:' || g AND r.expires_at > ?)"
                    + " ORDER BY random() LIMIT ?", partitions - 1, at, share - held.size());
                if (!free.isEmpty()) {
                    held.addAll(partitionsOf(c, "INSERT INTO " + relay + " (name, owner, expires_at) SELECT n, ?, ? FROM"
                        + " unnest(?::varchar[]) n ON CONFLICT (name) DO UPDATE SET owner = EXCLUDED.owner, expires_at ="
                        + " EXCLUDED.expires_at WHERE " + relay + ".expires_at <= ? RETURNING name", owner, until,
                        names(c, free), at));
                }
            }
            return Set.copyOf(held);
        });
    }

    @Override
    public void renew(String owner, Duration lease, Instant now) {
        autocommit("renew relay partitions", c -> update(c, "UPDATE " + relay + " SET expires_at = ? WHERE owner = ?"
            + " AND (name LIKE 'partition:%' OR name = ?)", OffsetDateTime.ofInstant(now.plus(lease), ZoneOffset.UTC),
            owner, MEMBER + owner));
    }

    /** @return this owner's place among the live members by name, and how many there are */
    private long[] rank(Connection c, String owner, OffsetDateTime now) throws SQLException {
        try (PreparedStatement ps = prepared(c, "SELECT count(*) FILTER (WHERE owner < ?), count(*) FROM " + relay
            + " WHERE name LIKE 'member:%' AND expires_at > ?", owner, now); ResultSet rs = ps.executeQuery()) {
            rs.next();
            return new long[] {rs.getLong(1), rs.getLong(2)};
        }
    }

    /** Refuses to join relays that use another partition count; with none alive, the count becomes this one. */
    private void join(Connection c, String owner, int partitions, OffsetDateTime now) throws SQLException {
        update(c, "INSERT INTO " + relay + " (name, owner, expires_at) VALUES (?, ?, 'infinity') ON CONFLICT (name)"
            + " DO NOTHING", PARTITIONS, Integer.toString(partitions));
        String stored = text(c, "SELECT owner FROM " + relay + " WHERE name = ?", PARTITIONS);
        if (Integer.toString(partitions).equals(stored)) {
            return;
        }
        List<String> others = new ArrayList<>();
        try (PreparedStatement ps = c.prepareStatement("SELECT owner FROM " + relay + " WHERE name LIKE 'member:%'"
            + " AND expires_at > ? AND owner <> ? ORDER BY owner")) {
            ps.setObject(1, now);
            ps.setString(2, owner);
            try (ResultSet rs = ps.executeQuery()) {
                while (rs.next()) {
                    others.add(rs.getString(1));
                }
            }
        }
        if (!others.isEmpty()) {
            throw new IllegalStateException(OutboxConfigurationProperties.PREFIX + ".partitions is " + partitions
                + " on this instance, but " + stored + " on the instances relaying " + outbox + " now (" + others + "):"
                + " set the same value on every instance. To change it, stop them all, then start them with the new"
                + " value");
        }
        LOG.info("idempotency outbox {}: the relay partitions change from {} to {}", outbox, stored, partitions);
        update(c, "DELETE FROM " + relay + " WHERE name LIKE 'partition:%'");
        update(c, "UPDATE " + relay + " SET owner = ? WHERE name = ?", Integer.toString(partitions), PARTITIONS);
    }

    @Override
    public void leave(String owner) {
        autocommit("give back relay partitions", c -> {
            update(c, "DELETE FROM " + relay + " WHERE (name LIKE 'partition:%' AND owner = ?) OR name = ?", owner,
                MEMBER + owner);
            joined.remove(owner);
            return null;
        });
    }

    @Override
    public AutoCloseable onAppend(Runnable wake) {
        OutboxListener listener = new OutboxListener(() -> store.dedicatedConnection(config.getListenUrl()), channel,
            wake);
        listener.start();
        return listener;
    }

    private static Array names(Connection c, List<Integer> partitions) throws SQLException {
        return c.createArrayOf("varchar", partitions.stream().map(p -> PARTITION + p).toArray());
    }

    private static List<Integer> partitionsOf(Connection c, String sql, Object... args) throws SQLException {
        try (PreparedStatement ps = prepared(c, sql, args); ResultSet rs = ps.executeQuery()) {
            List<Integer> out = new ArrayList<>();
            while (rs.next()) {
                out.add(Integer.parseInt(rs.getString(1).substring(PARTITION.length())));
            }
            return out;
        }
    }

    private static int update(Connection c, String sql, Object... args) throws SQLException {
        try (PreparedStatement ps = prepared(c, sql, args)) {
            return ps.executeUpdate();
        }
    }

    private static long count(Connection c, String sql, Object... args) throws SQLException {
        try (PreparedStatement ps = prepared(c, sql, args); ResultSet rs = ps.executeQuery()) {
            rs.next();
            return rs.getLong(1);
        }
    }

    private static String text(Connection c, String sql, Object... args) throws SQLException {
        try (PreparedStatement ps = prepared(c, sql, args); ResultSet rs = ps.executeQuery()) {
            return rs.next() ? rs.getString(1) : null;
        }
    }

    private static PreparedStatement prepared(Connection c, String sql, Object... args) throws SQLException {
        PreparedStatement ps = c.prepareStatement(sql);
        try {
            for (int i = 0; i < args.length; i++) {
                if (args[i] instanceof Array a) {
                    ps.setArray(i + 1, a);
                } else {
                    ps.setObject(i + 1, args[i]);
                }
            }
            return ps;
        } catch (SQLException | RuntimeException e) {
            ps.close();
            throw e;
        }
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
