package dev.idempotency.messaging;

import java.nio.charset.StandardCharsets;
import java.util.Set;
import java.util.stream.Collectors;
import java.util.stream.IntStream;
import java.util.zip.CRC32;

/**
 * How the outbox's ordering keys map to relay partitions (CONTRACT M9): CRC-32 of the key's UTF-8
 * bytes, modulo the partition count. The same on every instance and every JVM, so every instance
 * agrees on which partition, and so which relay, a key belongs to.
 */
public final class OutboxPartitions {

    private OutboxPartitions() {
    }

    /** @return the partition of {@code orderingKey} among {@code partitions}, in {@code [0, partitions)} */
    public static int of(String orderingKey, int partitions) {
        CRC32 crc = new CRC32();
        crc.update(orderingKey.getBytes(StandardCharsets.UTF_8));
        return (int) (crc.getValue() % partitions);
    }

    /** @return {@code 0 .. partitions - 1} */
    public static Set<Integer> all(int partitions) {
        return IntStream.range(0, partitions).boxed().collect(Collectors.toUnmodifiableSet());
    }
}
