-- The transactional outbox (dev.idempotency:idempotency-messaging, CONTRACT M3): messages written in the
-- application's transaction and relayed to the broker after commit. Layout documented on
-- dev.idempotency.store.postgres.PostgresOutboxStore. Unused (and empty) without the messaging module.
CREATE TABLE IF NOT EXISTS ${table}_outbox (
    id           bigserial    NOT NULL,
    message_id   varchar(255) NOT NULL,
    ordering_key varchar(255) NOT NULL,
    destination  varchar(255) NOT NULL,
    routing_key  varchar(255) NOT NULL,
    content_type varchar(255) NOT NULL,
    headers      text[]       NOT NULL,
    body         bytea        NOT NULL,
    attempts     integer      NOT NULL DEFAULT 0,
    retry_at     timestamptz,
    parked       boolean      NOT NULL DEFAULT false,
    last_error   text,
    created_at   timestamptz  NOT NULL,
    CONSTRAINT ${table_name}_outbox_pkey PRIMARY KEY (id),
    CONSTRAINT ${table_name}_outbox_message_id_key UNIQUE (message_id)
);

-- The relay's read: per ordering key its earliest waiting message.
CREATE INDEX IF NOT EXISTS ${table_name}_outbox_waiting_idx ON ${table}_outbox (ordering_key, id) WHERE NOT parked;

-- Which instance relays: one row, a lease.
CREATE TABLE IF NOT EXISTS ${table}_outbox_relay (
    name       varchar(64)  NOT NULL,
    owner      varchar(255) NOT NULL,
    expires_at timestamptz  NOT NULL,
    CONSTRAINT ${table_name}_outbox_relay_pkey PRIMARY KEY (name)
);
