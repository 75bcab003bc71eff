-- The payments example's business tables (environment `postgres`), applied at startup by
-- dev.idempotency.examples.payments.PaymentsSchema with Flyway, history table
-- payments_schema_history. ${flyway:defaultSchema} is payments.postgres.schema when set, else the
-- connection's current schema. The idempotency store keeps its own table and history beside them.

CREATE TABLE ${flyway:defaultSchema}.payments (
    id              varchar(32)  PRIMARY KEY,
    status          varchar(20)  NOT NULL
        CHECK (status IN ('AUTHORIZED', 'CAPTURED', 'PARTIALLY_REFUNDED', 'REFUNDED')),
    amount          bigint       NOT NULL CHECK (amount > 0),
    currency        char(3)      NOT NULL,
    amount_captured bigint       NOT NULL,
    amount_refunded bigint       NOT NULL,
    description     text,
    customer        varchar(64),
    -- json, not jsonb: keeps the members in the caller's order
    metadata        json         NOT NULL,
    created_at      timestamptz  NOT NULL,
    updated_at      timestamptz  NOT NULL,
    CHECK (amount_captured BETWEEN 0 AND amount),
    CHECK (amount_refunded BETWEEN 0 AND amount_captured)
);
CREATE INDEX payments_created_at_idx ON ${flyway:defaultSchema}.payments (created_at DESC, id);
CREATE INDEX payments_customer_idx ON ${flyway:defaultSchema}.payments (customer, created_at DESC, id);

CREATE TABLE ${flyway:defaultSchema}.payment_refunds (
    seq        bigserial    PRIMARY KEY,
    id         varchar(32)  NOT NULL UNIQUE,
    payment_id varchar(32)  NOT NULL REFERENCES ${flyway:defaultSchema}.payments (id),
    amount     bigint       NOT NULL CHECK (amount > 0),
    reason     text,
    created_at timestamptz  NOT NULL
);
CREATE INDEX payment_refunds_payment_idx ON ${flyway:defaultSchema}.payment_refunds (payment_id, seq);

-- The side-effect ledger behind GET /stats: one row per state change, written in the change's
-- transaction. Append-only, so concurrent operations never wait on a shared counter row.
CREATE TABLE ${flyway:defaultSchema}.payment_side_effects (
    seq        bigserial    PRIMARY KEY,
    operation  varchar(10)  NOT NULL CHECK (operation IN ('CREATE', 'CAPTURE', 'REFUND', 'UPDATE')),
    payment_id varchar(32)  NOT NULL REFERENCES ${flyway:defaultSchema}.payments (id),
    created_at timestamptz  NOT NULL
);
