package dev.idempotency.store.redis;

import dev.idempotency.server.Checks;
import dev.idempotency.server.store.IdempotencyStoreException;
import dev.idempotency.server.store.RecordCounts;
import dev.idempotency.server.store.RecordInfo;
import dev.idempotency.server.store.StoredResponseCodec;
import io.lettuce.core.KeyScanCursor;
import io.lettuce.core.ScanArgs;
import io.lettuce.core.ScanCursor;
import io.lettuce.core.cluster.api.async.RedisAdvancedClusterAsyncCommands;
import io.lettuce.core.cluster.models.partitions.Partitions;
import io.lettuce.core.cluster.models.partitions.RedisClusterNode;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.time.Clock;
import java.time.Instant;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Optional;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;
import java.util.concurrent.CompletionStage;
import java.util.function.Consumer;

import static dev.idempotency.store.redis.RedisCalls.run;
import static dev.idempotency.store.redis.RedisRecords.COMPLETED;
import static dev.idempotency.store.redis.RedisRecords.DEADLINE;
import static dev.idempotency.store.redis.RedisRecords.FINGERPRINT;
import static dev.idempotency.store.redis.RedisRecords.FINGERPRINT_LENGTH;
import static dev.idempotency.store.redis.RedisRecords.IN_PROGRESS;
import static dev.idempotency.store.redis.RedisRecords.RELEASED;
import static dev.idempotency.store.redis.RedisRecords.STATE;
import static dev.idempotency.store.redis.RedisRecords.TOKEN;
import static dev.idempotency.store.redis.RedisRecords.checkFormat;
import static dev.idempotency.store.redis.RedisRecords.readLong;
import static dev.idempotency.store.redis.RedisRecords.readShort;

/**
 * The store's answers to an operator (CONTRACT O3): one record's state, the counts, the oldest
 * in-progress records. Reads only the first bytes of each record, never a body; a walk of the key
 * space stops after {@value #SCAN_LIMIT} records and says so.
 */
final class RedisInspection {

    /** The most records one inspection walk reads before it stops. */
    static final long SCAN_LIMIT = 1_000_000;
    /** A record's fixed part plus the longest fingerprint the filter sends, and the response's fixed part. */
    private static final int INSPECTED_PREFIX = FINGERPRINT + 64 + 7;

    private final RedisConnector connector;
    private final RedisKeys keys;
    private final Clock clock;

    RedisInspection(RedisConnector connector, RedisKeys keys, Clock clock) {
        this.connector = connector;
        this.keys = keys;
        this.clock = clock;
    }

    CompletionStage<Optional<RecordInfo>> find(String storeKey) {
        Objects.requireNonNull(storeKey, "storeKey");
        return inspect(connector.link(), keys.record(storeKey)).thenApply(Optional::ofNullable);
    }

    CompletionStage<RecordCounts> counts() {
        RedisLink link = connector.link();
        long now = clock.millis();
        long[] counts = new long[4];
        return walk(link, info -> {
            boolean over = info.state() == RecordInfo.State.RELEASED || now >= info.deadline().toEpochMilli();
            counts[info.state() == RecordInfo.State.IN_PROGRESS ? (over ? 1 : 0) : (over ? 3 : 2)]++;
        }).thenCompose(complete -> size(link).thenApply(size ->
            new RecordCounts(counts[0], counts[1], counts[2], counts[3], complete, size)));
    }

    CompletionStage<List<RecordInfo>> inProgressStartedBefore(Instant startedBefore, int limit) {
        Objects.requireNonNull(startedBefore, "startedBefore");
        Checks.atLeast(limit, 1, "limit");
        List<RecordInfo> found = new ArrayList<>();
        return walk(connector.link(), info -> {
            if (info.state() == RecordInfo.State.IN_PROGRESS && !info.startedAt().isAfter(startedBefore)) {
                found.add(info);
            }
        }).thenApply(complete -> found.stream().sorted(Comparator.comparing(RecordInfo::startedAt)).limit(limit).toList());
    }

    /**
     * Reads every record of the store's key space, one {@code SCAN} page at a time (a page's
     * records are read before the next page is asked for, so {@code sink} is called by one thread
     * at a time), up to {@value #SCAN_LIMIT} records.
     *
     * @return whether the walk saw the whole key space
     */
    private CompletableFuture<Boolean> walk(RedisLink link, Consumer<RecordInfo> sink) {
        ScanArgs args = ScanArgs.Builder.matches(globEscape(keys.prefix()) + "{*}").limit(1000);
        return page(link, ScanCursor.INITIAL, args, sink, 0);
    }

    private CompletableFuture<Boolean> page(RedisLink link, ScanCursor cursor, ScanArgs args,
                                            Consumer<RecordInfo> sink, long seen) {
        return run(link, "scan", c -> c.scan(cursor, args).toCompletableFuture().<Object>thenApply(v -> v),
            reply -> {
                @SuppressWarnings("unchecked")
                KeyScanCursor<byte[]> keys = (KeyScanCursor<byte[]>) reply;
                return keys;
            }).thenCompose(keys -> {
                List<CompletableFuture<RecordInfo>> reads = keys.getKeys().stream().map(k -> inspect(link, k)).toList();
                return CompletableFuture.allOf(reads.toArray(CompletableFuture[]::new)).thenCompose(v -> {
                    reads.forEach(r -> {
                        RecordInfo info = r.join();
                        if (info != null) { // gone since the scan saw it
                            sink.accept(info);
                        }
                    });
                    long total = seen + keys.getKeys().size();
                    if (keys.isFinished()) {
                        return CompletableFuture.completedFuture(true);
                    }
                    if (total >= SCAN_LIMIT) {
                        return CompletableFuture.completedFuture(false);
                    }
                    return page(link, keys, args, sink, total);
                });
            });
    }

    /** One record's state and timing from its first bytes and its length; {@code null} when it is gone. */
    private CompletableFuture<RecordInfo> inspect(RedisLink link, byte[] key) {
        CompletableFuture<byte[]> head = run(link, "getrange", c -> c.getrange(key, 0, INSPECTED_PREFIX - 1)
            .toCompletableFuture().<Object>thenApply(v -> v), reply -> (byte[]) reply);
        CompletableFuture<Long> length = run(link, "strlen", c -> c.strlen(key).toCompletableFuture()
            .<Object>thenApply(v -> v), reply -> (Long) reply);
        return head.thenCombine(length, (bytes, total) -> {
            if (bytes == null || bytes.length == 0) {
                return null;
            }
            String text = new String(key, StandardCharsets.UTF_8);
            String storeKey = text.substring(keys.prefix().length() + 1, text.length() - 1);
            try {
                return recordInfo(storeKey, bytes, total);
            } catch (IOException e) {
                throw new CompletionException(new IdempotencyStoreException(
                    "Redis idempotency store: cannot read " + text + ": " + e.getMessage(), e));
            }
        });
    }

    private RecordInfo recordInfo(String storeKey, byte[] head, long length) throws IOException {
        checkFormat(keys.recordText(storeKey), head, TOKEN + 16);
        long token = readLong(head, TOKEN);
        Instant startedAt = Instant.ofEpochMilli(token >> 10);
        Instant deadline = Instant.ofEpochMilli(readLong(head, DEADLINE));
        return switch (head[STATE]) {
            case IN_PROGRESS -> new RecordInfo(storeKey, RecordInfo.State.IN_PROGRESS, token, startedAt, deadline, 0, -1);
            case RELEASED -> new RecordInfo(storeKey, RecordInfo.State.RELEASED, token, startedAt, deadline, 0, -1);
            case COMPLETED -> {
                checkFormat(keys.recordText(storeKey), head, FINGERPRINT);
                int at = FINGERPRINT + readShort(head, FINGERPRINT_LENGTH);
                try {
                    yield new RecordInfo(storeKey, RecordInfo.State.COMPLETED, token, startedAt, deadline,
                        StoredResponseCodec.status(head, at), StoredResponseCodec.bodyLength(head, at, length - at));
                } catch (IllegalArgumentException e) {
                    throw new IOException("record " + keys.recordText(storeKey) + ": " + e.getMessage(), e);
                }
            }
            default -> throw new IOException("unknown state " + head[STATE]);
        };
    }

    /** The server's memory ({@code INFO memory}) and key count ({@code DBSIZE}). */
    private CompletableFuture<Map<String, Object>> size(RedisLink link) {
        CompletableFuture<String> info = run(link, "info", c -> c.info("memory").toCompletableFuture()
            .<Object>thenApply(v -> v), String::valueOf);
        CompletableFuture<Long> keys = run(link, "dbsize", c -> c.dbsize().toCompletableFuture()
            .<Object>thenApply(v -> v), reply -> (Long) reply);
        return info.thenCombine(keys, (text, dbsize) -> {
            Map<String, Object> size = new LinkedHashMap<>();
            for (String line : text.split("\\r?\\n")) {
                if (line.startsWith("used_memory:")) {
                    size.put("usedMemoryBytes", Long.parseLong(line.substring("used_memory:".length()).trim()));
                } else if (line.startsWith("maxmemory:")) {
                    size.put("maxMemoryBytes", Long.parseLong(line.substring("maxmemory:".length()).trim()));
                } else if (line.startsWith("maxmemory_policy:")) {
                    size.put("maxMemoryPolicy", line.substring("maxmemory_policy:".length()).trim());
                }
            }
            size.put("serverKeys", dbsize);
            return size;
        });
    }

    private static String globEscape(String text) {
        return text.replaceAll("([*?\\[\\]\\\\])", "\\\\$1");
    }

    /**
     * @return Redis's {@code maxmemory-policy} (of the node the shared connection reaches, for a
     *     cluster); failed when Redis cannot be reached or does not allow {@code CONFIG GET}
     */
    CompletableFuture<String> maxmemoryPolicy() {
        return run(connector.link(), "config-get", c -> c.configGet("maxmemory-policy").toCompletableFuture()
                .<Object>thenApply(v -> v),
            reply -> {
                Object value = reply instanceof Map<?, ?> m ? m.get("maxmemory-policy") : null;
                if (value == null) {
                    throw new IOException("no maxmemory-policy in the reply to CONFIG GET: " + reply);
                }
                return String.valueOf(value);
            });
    }

    /**
     * @return how many replicas the primary reports connected ({@code INFO replication}); for a
     *     cluster, the fewest that any master with slots has, from the topology the store knows
     */
    CompletableFuture<Integer> fewestReplicas() {
        return run(connector.link(), "info", c -> {
            if (c instanceof RedisAdvancedClusterAsyncCommands<byte[], byte[]> cluster) {
                Partitions partitions = cluster.getStatefulConnection().getPartitions();
                int fewest = Integer.MAX_VALUE;
                for (RedisClusterNode node : partitions) {
                    if (node.is(RedisClusterNode.NodeFlag.UPSTREAM) && !node.getSlots().isEmpty()) {
                        int replicas = (int) partitions.stream()
                            .filter(n -> node.getNodeId().equals(n.getSlaveOf())).count();
                        fewest = Math.min(fewest, replicas);
                    }
                }
                return CompletableFuture.completedFuture((Object) (fewest == Integer.MAX_VALUE ? 0 : fewest));
            }
            return c.info("replication").toCompletableFuture().thenApply(info -> (Object) info.lines()
                .filter(l -> l.startsWith("connected_slaves:"))
                .mapToInt(l -> Integer.parseInt(l.substring("connected_slaves:".length()).trim()))
                .findFirst().orElse(0));
        }, reply -> (Integer) reply);
    }
}
