-- Idempotency-Key records (dev.idempotency:idempotency-store-postgres). Applied by the store itself
-- with Flyway, history table ${table_name}_schema_history, so it never collides with the
-- application's own migrations. ${table} is the configured (optionally schema-qualified) table.
-- The layout is documented on dev.idempotency.store.postgres.PostgresIdempotencyStore.

-- Fencing tokens. CACHE 1 (no per-session ranges) so that a token drawn later is larger than every
-- token drawn before it, on any connection of any instance.
CREATE SEQUENCE IF NOT EXISTS ${table}_fencing_seq AS bigint CACHE 1;

CREATE TABLE IF NOT EXISTS ${table} (
    store_key        varchar(128) NOT NULL,
    fingerprint      bytea        NOT NULL,
    fencing_token    bigint       NOT NULL,
    holder           integer      NOT NULL,
    completed        boolean      NOT NULL,
    acquired_at      timestamptz  NOT NULL,
    expires_at       timestamptz  NOT NULL,
    response_status  smallint,
    response_headers text[],
    response_body    bytea,
    body_omitted     boolean,
    CONSTRAINT ${table_name}_pkey PRIMARY KEY (store_key),
    CONSTRAINT ${table_name}_completed_has_response CHECK (
        NOT completed OR (response_status IS NOT NULL AND response_headers IS NOT NULL
                          AND response_body IS NOT NULL AND body_omitted IS NOT NULL))
) WITH (fillfactor = 90);

-- The purge job's range scan (expires_at <= now); nothing else reads by time.
CREATE INDEX IF NOT EXISTS ${table_name}_expires_at_idx ON ${table} (expires_at);
