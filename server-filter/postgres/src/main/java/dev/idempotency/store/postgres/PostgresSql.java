package dev.idempotency.store.postgres;

/**
 * The store's SQL texts for one configured table. Only validated identifiers (see
 * {@link PostgresStoreConfigurationProperties}) are put into the texts; every value is a bind
 * parameter.
 */
final class PostgresSql {

    /** Expired: the lease (in progress) or the retention (completed) has ended at "now". */
    private static final String EXPIRED = "r.expires_at <= EXCLUDED.acquired_at";

    final String table;
    final String sequence;
    final String acquire;
    final String complete;
    final String release;
    final String renew;
    final String purge;

    PostgresSql(String qualifiedTable) {
        this.table = qualifiedTable;
        this.sequence = qualifiedTable + "_fencing_seq";
        // Parameters: 1 store_key, 2 fingerprint, 3 now, 4 lease end, 5 lock_timeout (ms).
        // The FROM clause runs before the row is inserted: it saves lock_timeout and sets the bounded
        // one (transaction-local), so the wait for a record another transaction holds uncommitted is
        // bounded; RETURNING, evaluated after that wait, puts the saved value back.
        this.acquire = "INSERT INTO " + table + " AS r"
            + " (store_key, fingerprint, fencing_token, holder, completed, acquired_at, expires_at)"
            + " SELECT ?, ?, nextval('" + sequence + "'), 1, false, ?, ?"
            + " FROM (SELECT set_config('idempotency.saved_lock_timeout', current_setting('lock_timeout'), true)"
            + " AS saved) s"
            + " CROSS JOIN LATERAL (SELECT set_config('lock_timeout', ?, true) AS applied WHERE s.saved IS NOT NULL) l"
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
            + " response_headers = CASE WHEN " + EXPIRED + " THEN NULL ELSE r.response_headers END,"
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
        // 1 now, 2 stale cutoff, 3 batch size, 4 now, 5 stale cutoff. Rows another purge (or an
        // acquire taking the record over) holds are skipped, so many instances purge side by side.
        String purgeable = "expires_at <= ? AND (completed OR expires_at <= ?)";
        this.purge = "DELETE FROM " + table + " WHERE ctid = ANY(ARRAY("
            + "SELECT ctid FROM " + table + " WHERE " + purgeable + " LIMIT ? FOR UPDATE SKIP LOCKED))"
            + " AND " + purgeable;
    }
}
