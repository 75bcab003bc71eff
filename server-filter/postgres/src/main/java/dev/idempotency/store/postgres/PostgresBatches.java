package dev.idempotency.store.postgres;

import dev.idempotency.server.store.AcquireResult;
import dev.idempotency.server.store.StoredResponse;

import java.security.MessageDigest;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.time.Duration;
import java.time.Instant;
import java.time.OffsetDateTime;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.TimeUnit;

/**
 * Acquires and completions of many requests in one round trip: the batches the store's
 * {@link StatementBatcher}s hand over, each answered call by call.
 */
final class PostgresBatches {

    private final PostgresIdempotencyStore store;

    PostgresBatches(PostgresIdempotencyStore store) {
        this.store = store;
    }

    /** An acquire waiting for its batch; {@code traceparent} is kept with its in-progress record, or {@code null}. */
    record AcquireCall(String storeKey, byte[] fingerprint, Duration lease, String traceparent) {
    }

    /** A completion waiting for its batch. */
    record CompleteCall(String storeKey, long token, StoredResponse response, Duration retention) {
    }

    /**
     * Acquires a batch of calls in one transaction, one commit. One statement first reads the
     * records of all the batch's keys ({@link PostgresSql#find}): a live record answers its calls
     * at once (replay, 409, 422; a batch of those writes and commits nothing). A second statement
     * inserts the records of the keys that have none ({@link PostgresSql#insertNew}), all at once.
     * Every other call (an expired record to take over, a key inserted meanwhile by another
     * transaction, a second call for a key of the batch) then runs the statements of
     * {@link #acquireAutocommit}, in the calls' order, so calls for the same key see each other as
     * if they had come one after the other. Alone, a call runs the
     * one-statement acquire, autocommitted. When any statement of a batch fails (a record held
     * uncommitted by another transaction past {@code lock-timeout} aborts the transaction), the
     * batch rolls back and each call is decided on its own, so one held record never fails the
     * others.
     */
    List<AcquireResult> acquireBatch(Connection c, List<AcquireCall> calls) throws SQLException {
        if (calls.size() > 1) {
            List<AcquireResult> results = store.inOneTransaction(c, () -> acquireTogether(c, calls));
            if (results != null) {
                return results;
            }
        }
        List<AcquireResult> each = new ArrayList<>(calls.size());
        for (AcquireCall call : calls) {
            each.add(store.acquireAutocommit(c, call));
        }
        return each;
    }

    /** The statements of a batch of acquires, inside its transaction (see {@link #acquireBatch}). */
    List<AcquireResult> acquireTogether(Connection c, List<AcquireCall> calls) throws SQLException {
        Instant now = store.now();
        byte[][] keys = new byte[calls.size()][];
        for (int i = 0; i < keys.length; i++) {
            keys[i] = StoreKeys.encode(calls.get(i).storeKey());
        }
        Map<String, Live> live = new HashMap<>(keys.length * 2);
        try (PreparedStatement ps = store.prepare(c, store.sql.find)) {
            ps.setArray(1, c.createArrayOf("bytea", keys));
            try (ResultSet rs = ps.executeQuery()) {
                while (rs.next()) {
                    Instant expiresAt = rs.getObject("expires_at", OffsetDateTime.class).toInstant();
                    if (now.isBefore(expiresAt)) {
                        live.putIfAbsent(StoreKeys.decode(rs.getBytes("store_key")), new Live(rs.getBytes("fingerprint"), expiresAt,
                            rs.getBoolean("completed") ? new AcquireResult.Replay(PostgresRecords.storedResponse(rs)) : null,
                            PostgresRecords.inProgressTrace(rs)));
                    }
                }
            }
        }
        AcquireResult[] answers = new AcquireResult[keys.length];
        List<Integer> absent = new ArrayList<>(keys.length);
        Set<String> inserting = new HashSet<>(keys.length * 2);
        for (int i = 0; i < keys.length; i++) {
            AcquireCall call = calls.get(i);
            Live record = live.get(call.storeKey());
            if (record != null) {
                answers[i] = record.answer(call.fingerprint(), now);
            } else if (inserting.add(call.storeKey())) {
                absent.add(i); // a later call for the same key meets this one's record below
            }
        }
        if (!absent.isEmpty()) {
            Map<String, Long> inserted = insertNew(c, calls, keys, absent, now);
            for (int i : absent) {
                Long token = inserted.get(calls.get(i).storeKey());
                if (token != null) {
                    answers[i] = new AcquireResult.Acquired(token, false);
                }
            }
        }
        // the rest in the calls' order: takeovers of expired records, keys another transaction
        // inserted since the first step, and second calls for a key of this batch
        List<AcquireResult> results = new ArrayList<>(keys.length);
        for (int i = 0; i < keys.length; i++) {
            AcquireCall call = calls.get(i);
            results.add(answers[i] != null ? answers[i]
                : store.acquireStatements(c, call));
        }
        return results;
    }

    /**
     * Inserts the in-progress records of the calls at {@code indexes}, whose keys had no live
     * record, in one statement ({@link PostgresSql#insertNew}).
     *
     * @return the fencing token of each store key inserted; a key that has a record by now is absent
     */
    Map<String, Long> insertNew(Connection c, List<AcquireCall> calls, byte[][] keys, List<Integer> indexes,
                                        Instant now) throws SQLException {
        int n = indexes.size();
        byte[][] newKeys = new byte[n][];
        byte[][] fingerprints = new byte[n][];
        Long[] leases = new Long[n];
        String[] traces = new String[n];
        for (int j = 0; j < n; j++) {
            int i = indexes.get(j);
            newKeys[j] = keys[i];
            fingerprints[j] = calls.get(i).fingerprint();
            leases[j] = TimeUnit.NANOSECONDS.toMicros(calls.get(i).lease().toNanos());
            traces[j] = calls.get(i).traceparent();
        }
        Map<String, Long> tokens = new HashMap<>(n * 2);
        try (PreparedStatement ps = store.prepare(c, store.sql.insertNew)) {
            ps.setString(1, store.lockTimeoutMillis);
            ps.setObject(2, PostgresIdempotencyStore.timestamp(now));
            ps.setArray(3, c.createArrayOf("bytea", newKeys));
            ps.setArray(4, c.createArrayOf("bytea", fingerprints));
            ps.setArray(5, c.createArrayOf("bigint", leases));
            ps.setArray(6, c.createArrayOf("text", traces));
            try (ResultSet rs = ps.executeQuery()) {
                while (rs.next()) {
                    tokens.put(StoreKeys.decode(rs.getBytes(1)), rs.getLong(2));
                }
            }
        }
        return tokens;
    }

    /** A live record a batch found: the answer for each of its calls. */
    record Live(byte[] fingerprint, Instant expiresAt, AcquireResult.Replay replay, String traceparent) {
        AcquireResult answer(byte[] callFingerprint, Instant now) {
            if (!MessageDigest.isEqual(fingerprint, callFingerprint)) {
                return new AcquireResult.Mismatch();
            }
            return replay != null ? replay : new AcquireResult.InProgress(Duration.between(now, expiresAt), traceparent);
        }
    }

    /**
     * Completes a batch of calls in one transaction, one commit: the completion statement once per
     * call, sent together as a JDBC batch (one round trip). When the batch fails, each call runs
     * on its own.
     */
    List<Boolean> completeBatch(Connection c, List<CompleteCall> calls) throws SQLException {
        if (calls.size() > 1) {
            List<Boolean> results = store.inOneTransaction(c, () -> completeStatements(c, calls));
            if (results != null) {
                return results;
            }
        }
        List<Boolean> each = new ArrayList<>(calls.size());
        for (CompleteCall call : calls) {
            each.add(store.complete(c, call.storeKey(), call.token(), call.response(), call.retention()));
        }
        return each;
    }

    /** The completion statement once per call, as one JDBC batch; @return whether each was stored */
    List<Boolean> completeStatements(Connection c, List<CompleteCall> calls) throws SQLException {
        try (PreparedStatement ps = store.prepare(c, store.sql.complete)) {
            for (CompleteCall call : calls) {
                store.bindComplete(c, ps, call.storeKey(), call.token(), call.response(), call.retention());
                ps.addBatch();
            }
            int[] counts = ps.executeBatch();
            List<Boolean> each = new ArrayList<>(calls.size());
            for (int count : counts) {
                each.add(count == 1);
            }
            return each;
        }
    }
}
