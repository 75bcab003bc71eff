package dev.idempotency.store.postgres;

/**
 * The store's SQL texts for one configured table. Only validated identifiers (see
 * {@link PostgresStoreConfigurationProperties}) are put into the texts; every value is a bind
 * parameter.
 */
final class PostgresSql {

    /** Expired: the lease (in progress) or the retention (completed) has ended at "now". */
    private static final String EXPIRED = "r.expires_at <= EXCLUDED.acquired_at";

    /**
     * @param value an SQL text expression, the holder's traceparent or null
     * @return the {@code response_headers} of an in-progress record: its trace entry
     *     ({@code :trace, 1, traceparent}, CONTRACT O4), or null when {@code value} is null
     */
    private static String traceEntry(String value) {
        return "string_to_array('" + PostgresRecords.TRACE_ENTRY + ",1,' || " + value + ", ',')";
    }

    final String table;
    final String sequence;
    final String acquireAutocommit;
    final String find;
    final String insertNew;
    final String acquire;
    final String complete;
    final String release;
    final String renew;
    final String purge;
    final String steps;
    final String recordStep;
    final String discardSteps;
    final String recordStepBeside;
    final String discardStepsBeside;
    final String purgeSteps;

    PostgresSql(String qualifiedTable) {
        this.table = qualifiedTable;
        this.sequence = qualifiedTable + "_fencing_seq";
        // Parameters: 1 store_key, 2 fingerprint, 3 now, 4 lease end, 5 lock_timeout (ms), 6 traceparent or null.
        // The acquire of autocommit mode, one statement for every outcome. "cur" is the record as the
        // statement's snapshot sees it. Only when there is none, "ins" inserts it; only when it has
        // expired, "tko" takes it over with a new token (re-checked on the latest row version, so of
        // concurrent takeovers one wins). A live record is only read: a replay, a 409 or a 422 writes,
        // locks and commits nothing, and nextval() runs only for a new holder. When another acquire
        // inserted or took over the record after the snapshot, no acquired row comes back and the
        // caller runs the locking upsert below. The lock_timeout (local to this statement's implicit
        // transaction) bounds the wait for a record another transaction holds uncommitted.
        this.acquireAutocommit = "WITH p AS MATERIALIZED (SELECT CAST(? AS bytea) AS k, CAST(? AS bytea) AS fp,"
            + " CAST(? AS timestamptz) AS now_at, CAST(? AS timestamptz) AS lease_end,"
            + " set_config('lock_timeout', ?, true) AS applied, " + traceEntry("CAST(? AS text)") + " AS trace),"
            + " cur AS (SELECT r.fencing_token, r.completed, r.fingerprint, r.expires_at, r.response_status,"
            + " r.response_headers, r.response_body, r.body_omitted FROM " + table + " r, p WHERE r.store_key = p.k),"
            + " ins AS (INSERT INTO " + table
            + " (store_key, fingerprint, fencing_token, holder, completed, acquired_at, expires_at, response_headers)"
            + " SELECT p.k, p.fp, nextval('" + sequence + "'), 1, false, p.now_at, p.lease_end, p.trace FROM p"
            + " WHERE NOT EXISTS (SELECT 1 FROM cur)"
            + " ON CONFLICT (store_key) DO NOTHING RETURNING fencing_token),"
            + " tko AS (UPDATE " + table + " AS r SET fingerprint = p.fp, fencing_token = nextval('" + sequence + "'),"
            + " holder = CASE WHEN r.completed THEN 1 ELSE r.holder + 1 END, completed = false,"
            + " acquired_at = p.now_at, expires_at = p.lease_end, response_status = NULL, response_headers = p.trace,"
            + " response_body = NULL, body_omitted = NULL"
            + " FROM p WHERE r.store_key = p.k AND r.expires_at <= p.now_at"
            + " AND EXISTS (SELECT 1 FROM cur WHERE cur.expires_at <= p.now_at)"
            + " RETURNING r.fencing_token, r.holder)"
            + " SELECT 'I' AS kind, fencing_token, 1 AS holder, NULL::boolean AS completed, NULL::bytea AS fingerprint,"
            + " NULL::timestamptz AS expires_at, NULL::smallint AS response_status, NULL::text[] AS response_headers,"
            + " NULL::bytea AS response_body, NULL::boolean AS body_omitted FROM ins"
            + " UNION ALL SELECT 'T', fencing_token, holder, NULL, NULL, NULL, NULL, NULL, NULL, NULL FROM tko"
            + " UNION ALL SELECT 'E', fencing_token, 0, completed, fingerprint, expires_at, response_status,"
            + " response_headers, response_body, body_omitted FROM cur";
        // A batch's first step: the records of its keys, one index probe per key whatever the table's
        // statistics say (LIMIT keeps the lateral subquery a parameterized scan, never a hash join over a
        // sequential scan). Parameter: 1 store keys (bytea[], see StoreKeys).
        this.find = "SELECT r.store_key, r.completed, r.fingerprint, r.expires_at, r.response_status,"
            + " r.response_headers, r.response_body, r.body_omitted FROM unnest(CAST(? AS bytea[])) AS k(key)"
            + " CROSS JOIN LATERAL (SELECT * FROM " + table + " t WHERE t.store_key = k.key LIMIT 1) r";
        // A batch's second step: the records of its keys that the first step did not find live, inserted
        // in one statement. A key with a record (an expired one to take over, or one another transaction
        // inserted since) is skipped by ON CONFLICT and comes back without a row; its call then runs the
        // one-statement acquire. The FROM clause sets the bounded lock_timeout (transaction-local) before
        // any row is inserted, so the wait for a key another transaction holds uncommitted is bounded.
        // Parameters: 1 lock_timeout (ms), 2 now, 3 store keys (bytea[]), 4 fingerprints (bytea[]),
        // 5 leases (bigint[], microseconds), 6 traceparents (text[], null elements for none).
        this.insertNew = "INSERT INTO " + table
            + " (store_key, fingerprint, fencing_token, holder, completed, acquired_at, expires_at, response_headers)"
            + " SELECT u.k, u.fp, nextval('" + sequence + "'), 1, false, p.now_at,"
            + " p.now_at + u.lease_us * interval '1 microsecond', " + traceEntry("u.tp")
            + " FROM (SELECT set_config('lock_timeout', ?, true) AS applied, CAST(? AS timestamptz) AS now_at) p"
            + " CROSS JOIN unnest(CAST(? AS bytea[]), CAST(? AS bytea[]), CAST(? AS bigint[]), CAST(? AS text[]))"
            + " AS u(k, fp, lease_us, tp)"
            + " ON CONFLICT (store_key) DO NOTHING RETURNING store_key, fencing_token";
        // The locking upsert, for transactional mode (where the lock_timeout must be put back for the
        // handler's own statements) and for the rare autocommit acquire that raced another one.
        // Parameters: 1 store_key, 2 fingerprint, 3 now, 4 lease end, 5 lock_timeout (ms), 6 traceparent or null.
        // The FROM clause runs before the row is inserted: it saves lock_timeout and sets the bounded
        // one (transaction-local), so the wait for a record another transaction holds uncommitted is
        // bounded; RETURNING, evaluated after that wait, puts the saved value back.
        this.acquire = "INSERT INTO " + table + " AS r"
            + " (store_key, fingerprint, fencing_token, holder, completed, acquired_at, expires_at, response_headers)"
            + " SELECT ?, ?, nextval('" + sequence + "'), 1, false, ?, ?, l.trace"
            + " FROM (SELECT set_config('idempotency.saved_lock_timeout', current_setting('lock_timeout'), true)"
            + " AS saved) s"
            + " CROSS JOIN LATERAL (SELECT set_config('lock_timeout', ?, true) AS applied, "
            + traceEntry("CAST(? AS text)") + " AS trace WHERE s.saved IS NOT NULL) l"
            + " ON CONFLICT (store_key) DO UPDATE SET"
            + " fingerprint = CASE WHEN " + EXPIRED + " THEN EXCLUDED.fingerprint ELSE r.fingerprint END,"
            + " fencing_token = CASE WHEN NOT (" + EXPIRED + ") THEN r.fencing_token"
            + " WHEN EXCLUDED.fencing_token > r.fencing_token THEN EXCLUDED.fencing_token"
            + " ELSE nextval('" + sequence + "') END,"
            + " holder = CASE WHEN NOT (" + EXPIRED + ") THEN r.holder WHEN r.completed THEN 1 ELSE r.holder + 1 END,"
            + " completed = CASE WHEN " + EXPIRED + " THEN false ELSE r.completed END,"
            + " acquired_at = CASE WHEN " + EXPIRED + " THEN EXCLUDED.acquired_at ELSE r.acquired_at END,"
            + " expires_at = CASE WHEN " + EXPIRED + " THEN EXCLUDED.expires_at ELSE r.expires_at END,"
            + " response_status = CASE WHEN " + EXPIRED + " THEN NULL ELSE r.response_status END,"
            + " response_headers = CASE WHEN " + EXPIRED + " THEN EXCLUDED.response_headers ELSE r.response_headers END,"
            + " response_body = CASE WHEN " + EXPIRED + " THEN NULL ELSE r.response_body END,"
            + " body_omitted = CASE WHEN " + EXPIRED + " THEN NULL ELSE r.body_omitted END"
            + " RETURNING fencing_token = currval('" + sequence + "') AS acquired, fencing_token, holder, completed,"
            + " fingerprint, expires_at, response_status, response_headers, response_body, body_omitted,"
            + " set_config('lock_timeout', current_setting('idempotency.saved_lock_timeout'), true) AS restored";
        // 1 retention end, 2 status, 3 headers, 4 body, 5 omitted, 6 store_key, 7 token
        this.complete = "UPDATE " + table + " SET completed = true, expires_at = ?, response_status = ?,"
            + " response_headers = ?, response_body = ?, body_omitted = ?"
            + " WHERE store_key = ? AND fencing_token = ? AND NOT completed";
        // 1 store_key, 2 token
        this.release = "DELETE FROM " + table + " WHERE store_key = ? AND fencing_token = ? AND NOT completed";
        // 1 lease end, 2 store_key, 3 token
        this.renew = "UPDATE " + table + " SET expires_at = ?"
            + " WHERE store_key = ? AND fencing_token = ? AND NOT completed";
        // Durable steps (CONTRACT S23), in <table>_steps. 1 store_key, 2 now.
        String stepsTable = qualifiedTable + "_steps";
        this.steps = "SELECT step, result FROM " + stepsTable + " WHERE store_key = ? AND expires_at > ? ORDER BY recorded_at";
        // Fenced by reading the holder's in-progress record FOR SHARE (a takeover's update waits, or
        // is waited for and re-checked); the first result stays unless it had expired.
        // 1 step, 2 result, 3 now, 4 keep end, 5 store_key, 6 token
        this.recordStep = "INSERT INTO " + stepsTable + " AS s (store_key, step, result, recorded_at, expires_at)"
            + " SELECT r.store_key, ?, ?, ?, ? FROM " + table + " r"
            + " WHERE r.store_key = ? AND r.fencing_token = ? AND NOT r.completed FOR SHARE"
            + " ON CONFLICT (store_key, step) DO UPDATE SET"
            + " result = CASE WHEN s.expires_at <= EXCLUDED.recorded_at THEN EXCLUDED.result ELSE s.result END,"
            + " recorded_at = CASE WHEN s.expires_at <= EXCLUDED.recorded_at THEN EXCLUDED.recorded_at"
            + " ELSE s.recorded_at END,"
            + " expires_at = GREATEST(s.expires_at, EXCLUDED.expires_at) RETURNING 1";
        // Beside a transactional-mode attempt (S18): fenced by the attempt's transaction still running.
        // 1 store_key, 2 step, 3 result, 4 now, 5 keep end, 6 the attempt's transaction id (xid8 as text)
        this.recordStepBeside = "INSERT INTO " + stepsTable + " AS s (store_key, step, result, recorded_at, expires_at)"
            + " SELECT CAST(? AS bytea), CAST(? AS text), CAST(? AS bytea), CAST(? AS timestamptz), CAST(? AS timestamptz)"
            + " WHERE pg_xact_status(CAST(? AS xid8)) = 'in progress'"
            + " ON CONFLICT (store_key, step) DO UPDATE SET"
            + " result = CASE WHEN s.expires_at <= EXCLUDED.recorded_at THEN EXCLUDED.result ELSE s.result END,"
            + " recorded_at = CASE WHEN s.expires_at <= EXCLUDED.recorded_at THEN EXCLUDED.recorded_at"
            + " ELSE s.recorded_at END,"
            + " expires_at = GREATEST(s.expires_at, EXCLUDED.expires_at) RETURNING 1";
        // 1 the attempt's transaction id, 2 store_key; one row: whether that transaction still runs
        this.discardStepsBeside = "WITH h AS (SELECT pg_xact_status(CAST(? AS xid8)) = 'in progress' AS running),"
            + " d AS (DELETE FROM " + stepsTable + " WHERE store_key = ? AND (SELECT running FROM h) RETURNING 1)"
            + " SELECT running FROM h";
        // 1 store_key, 2 token, 3 store_key; one row: 1 when the token holds the record (its steps deleted)
        this.discardSteps = "WITH h AS (SELECT 1 FROM " + table + " WHERE store_key = ? AND fencing_token = ?"
            + " AND NOT completed FOR SHARE), d AS (DELETE FROM " + stepsTable + " WHERE store_key = ?"
            + " AND EXISTS (SELECT 1 FROM h) RETURNING 1) SELECT count(*) FROM h";
        // 1 now, 2 batch size, 3 now
        this.purgeSteps = "DELETE FROM " + stepsTable + " WHERE ctid = ANY(ARRAY(SELECT ctid FROM " + stepsTable
            + " WHERE expires_at <= ? LIMIT ? FOR UPDATE SKIP LOCKED)) AND expires_at <= ?";
        // 1 now, 2 stale cutoff, 3 batch size, 4 now, 5 stale cutoff. Rows another purge (or an
        // acquire taking the record over) holds are skipped, so many instances purge side by side.
        String purgeable = "expires_at <= ? AND (completed OR expires_at <= ?)";
        this.purge = "DELETE FROM " + table + " WHERE ctid = ANY(ARRAY("
            + "SELECT ctid FROM " + table + " WHERE " + purgeable + " LIMIT ? FOR UPDATE SKIP LOCKED))"
            + " AND " + purgeable;
    }
}
