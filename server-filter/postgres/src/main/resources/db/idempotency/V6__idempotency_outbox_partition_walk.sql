-- The relay's read when an instance relays some of the partitions (CONTRACT M9): each partition's waiting messages
-- in publish order, so that an instance walks its own partitions only, never the backlog of the others.
CREATE INDEX IF NOT EXISTS ${table_name}_outbox_partition_order_idx ON ${table}_outbox (relay_partition, id)
    WHERE NOT parked;

-- Replaced by the index above: no statement reads the keys of a partition.
DROP INDEX IF EXISTS ${table}_outbox_partition_idx;
