-- Durable steps (CONTRACT S23): the results an operation's steps recorded, apart from its record so
-- that they outlive its release (a retry after a released 5xx resumes after the last recorded step).
-- Written only by the holder of the record's lease (the INSERT reads the record FOR SHARE with the
-- holder's token), kept until expires_at (the route's retention and lease from the write), purged
-- with the records. Empty unless an application runs steps.
CREATE TABLE IF NOT EXISTS ${table}_steps (
    store_key   bytea       NOT NULL,
    step        text        NOT NULL,
    result      bytea       NOT NULL,
    recorded_at timestamptz NOT NULL,
    expires_at  timestamptz NOT NULL,
    CONSTRAINT ${table_name}_steps_pkey PRIMARY KEY (store_key, step)
);

CREATE INDEX IF NOT EXISTS ${table_name}_steps_expires_at_idx ON ${table}_steps (expires_at);
