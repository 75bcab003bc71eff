-- The relay's partitions (dev.idempotency:idempotency-messaging, CONTRACT M9): each message's ordering key hashes into
-- one of idempotency.outbox.partitions partitions, written at publish; each partition is relayed by one instance at a
-- time. Messages published before this migration are in partition 0: the relay still sends each key's earliest
-- waiting message first, wherever it lies, so their keys keep their order.
ALTER TABLE ${table}_outbox ADD COLUMN IF NOT EXISTS relay_partition integer NOT NULL DEFAULT 0;

-- The relay's read: the keys waiting in its partitions.
CREATE INDEX IF NOT EXISTS ${table_name}_outbox_partition_idx ON ${table}_outbox (relay_partition, ordering_key)
    WHERE NOT parked;

-- The relay table now holds one row per partition ('partition:<n>', owner, lease end), one per live instance
-- ('member:<owner>', heartbeat end), and the partition count they share ('partitions', the count in owner).
ALTER TABLE ${table}_outbox_relay ALTER COLUMN name TYPE varchar(300);
