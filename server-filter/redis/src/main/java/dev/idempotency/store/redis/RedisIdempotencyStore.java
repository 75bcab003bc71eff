package dev.idempotency.store.redis;

import dev.idempotency.server.Checks;
import dev.idempotency.server.store.AcquireResult;
import dev.idempotency.server.store.IdempotencyStore;
import dev.idempotency.server.store.IdempotencyStoreException;
import dev.idempotency.server.store.RecordCounts;
import dev.idempotency.server.store.RecordInfo;
import dev.idempotency.server.store.StoreInspection;
import dev.idempotency.server.store.StoredResponse;
import dev.idempotency.server.store.StoredResponseCodec;
import dev.idempotency.server.store.UnconfirmedAcquireException;
import io.lettuce.core.AbstractRedisClient;
import io.lettuce.core.RedisClient;
import io.lettuce.core.RedisURI;
import io.lettuce.core.ScriptOutputType;
import io.lettuce.core.api.StatefulConnection;
import io.lettuce.core.RedisCommandExecutionException;
import io.lettuce.core.KeyScanCursor;
import io.lettuce.core.ScanArgs;
import io.lettuce.core.ScanCursor;
import io.lettuce.core.SetArgs;
import io.lettuce.core.cluster.api.async.RedisAdvancedClusterAsyncCommands;
import io.lettuce.core.cluster.api.async.RedisClusterAsyncCommands;
import io.lettuce.core.cluster.models.partitions.Partitions;
import io.lettuce.core.cluster.models.partitions.RedisClusterNode;
import io.lettuce.core.cluster.RedisClusterClient;
import io.netty.util.concurrent.EventExecutor;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.time.Clock;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.LinkedHashMap;
import java.util.Optional;
import java.util.function.Consumer;
import java.util.Arrays;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.ThreadLocalRandom;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import java.util.stream.Collectors;

/**
 * An {@link IdempotencyStore} on Redis, standalone or Redis Cluster, through Lettuce. A record is
 * one Redis string, so every operation touches one key and is atomic on its own:
 * <ul>
 *   <li>acquire is one {@code SET key record NX GET PX ttl}: it creates the in-progress record
 *       when there is none (a new key) and otherwise hands back the record found, unchanged, which
 *       answers a replay, a mismatch or a duplicate in flight without a script and without a
 *       write. Only when the record found is over (its lease or retention ended, or it was
 *       released) does a second call, a Lua script, take it over. On Redis before 7.0, where
 *       {@code SET} cannot combine {@code NX} and {@code GET}, a small script does the same;</li>
 *   <li>complete, renew and release are one Lua script call each ({@code EVALSHA}, or
 *       {@code EVAL} once after the server answers {@code NOSCRIPT}), which checks the state and
 *       the fencing token before it writes.</li>
 * </ul>
 *
 * <h2>Keys</h2>
 * For a store key {@code K} and the configured prefix {@code P} (default {@code idempotency:}),
 * the record is the string {@code P{K}}, and its durable steps (CONTRACT S23), when it has any,
 * the hash {@code P{K}:steps}: one field per step holding its result, and the field {@code ""}
 * holding the latest keep deadline of its steps (8 bytes). {@code {K}} is a Redis Cluster hash
 * tag, so a record and its steps share a slot and one script checks the one and writes the other. The prefix may
 * not contain braces. Keys are sent as UTF-8 bytes; store keys are the filter's fixed-length hex
 * hashes, never the client's raw key.
 *
 * <h2>The record (binary, big-endian)</h2>
 * <pre>
 * offset  size  field
 *      0     1  format, {@value #FORMAT}
 *      1     1  state: 'P' in progress, 'C' completed, 'R' released
 *      2     8  fencing token
 *     10     8  deadline, epoch ms by the injected Clock: the lease's end in progress, the
 *               retention's end once completed
 *     18     2  fingerprint length n
 *     20     n  fingerprint
 *   20+n  rest  completed records only: the response in {@link StoredResponseCodec}'s form
 *               (status, omitted flag, header block, body exactly as sent)
 * </pre>
 * A released record ('R') is a tombstone that keeps the last fencing token, so the next acquire
 * of the key continues above it.
 *
 * <h2>Time, deadlines and TTLs</h2>
 * Every decision (is the lease live, is the retention over, how long does the lease still run)
 * compares the {@code deadline} with "now" read from the injected {@link Clock}, never with
 * Redis' clock, so tests move time instead of sleeping and all instances decide alike. Redis
 * TTLs only collect garbage, and are relative durations set at each write, so a clock that is
 * offset from real time (or runs faster, like a test clock) never makes a record vanish before
 * its deadline:
 * <ul>
 *   <li>in progress (acquire, renew): TTL = lease + {@code late-completion-window} (default
 *       24 h). The record must outlive its lease: a holder whose lease expired but was not taken
 *       over may still complete or release it (the SPI's late-completion rule), while an acquire
 *       already treats it as over and takes it over. After the window Redis deletes it and a
 *       very late completion returns {@code false};</li>
 *   <li>completed: TTL = retention + {@code expiry-grace} (default 1 min), so Redis removes it
 *       shortly after its retention (CONTRACT S16); until then an acquire past the deadline
 *       treats it as over and overwrites it;</li>
 *   <li>released: the tombstone lives for {@code expiry-grace} (with a zero grace the release
 *       deletes the record). Its holder released it, and a holder that was taken over before
 *       finds no in-progress record with its token either way, so the tombstone only keeps the
 *       token for an acquire that follows soon (CONTRACT S16: no key outlives its record by more
 *       than the grace).</li>
 * </ul>
 *
 * <h2>Fencing tokens</h2>
 * A new record's token comes from the acquiring instance's clock: epoch milliseconds times 1024
 * plus ten random bits. Taking over a record (or a tombstone) gives the larger of that and the
 * record's token plus one, decided by the script. Tokens of one key therefore strictly increase
 * while any record of it exists, and across its disappearance as long as the instances' clocks
 * agree to within the time Redis kept the last record (at least {@code expiry-grace}, a minute
 * by default). A token is only ever compared for equality with the record's own, so a late
 * holder can never complete a record that was re-created after its own disappeared.
 *
 * <h2>Connection, threads and failures</h2>
 * The store talks to Redis through Lettuce's asynchronous API with a byte-array codec, on
 * connections of its own opened on first use (not in the constructor) with
 * {@code connectAsync}: no call ever blocks a thread. A call made on an event loop uses a
 * connection of that loop, so it is written and answered on the calling thread (see
 * {@link RedisConnector}); the application's client itself is never changed.
 * {@code command-timeout} bounds each call, the connect included, by a periodic check instead
 * of a timer per command ({@link CommandDeadlines}): an event loop checks its own connection's
 * calls, and one check on a Lettuce thread covers the rest. Any Lettuce failure (connection
 * refused or lost, timeout, error reply) and any record that cannot be decoded fails the stage with an
 * {@link IdempotencyStoreException}. While a connection is down, calls fail at once; a failed
 * connect is tried again on the next call, and an established connection reconnects by itself
 * (Lettuce's reconnect backoff).
 *
 * <h2>Replicas and failovers (CONTRACT S24)</h2>
 * With {@code wait-replicas} N &gt; 0, every write is followed by {@code WAIT N timeout} on the
 * same connection ({@link ReplicaWait}), so a failover to a replica that confirmed it cannot lose
 * it. An acquire that fewer replicas confirm is released and fails with an
 * {@link IdempotencyStoreException} (the handler does not run); a completion, renewal or step
 * that fewer confirm is waited for twice more, then kept, logged and counted
 * ({@link #underReplicatedWrites()}); a {@code WAIT} lost with its connection fails the write,
 * to be sent again. With a {@code redis-sentinel://} URI the connections are opened to the
 * primary the sentinels name, on every (re)connect; no connection ever reads from a replica.
 *
 * <h2>Inspection (CONTRACT O3)</h2>
 * {@link #find} reads the first bytes of one record and its length ({@code GETRANGE},
 * {@code STRLEN}), never its body. {@link #counts} and {@link #inProgressStartedBefore} walk the
 * keyspace with {@code SCAN ... MATCH P{*} COUNT 1000} (every node of a cluster) and read each
 * record's first bytes the same way: about two commands per record, pipelined, for an
 * operator's question, not for polling; a walk stops after {@value #INSPECTION_SCAN_LIMIT}
 * records and says so ({@link RecordCounts#complete()}). A record's start time is read from its
 * fencing token, which is the acquiring instance's clock in milliseconds times 1024. The size
 * reported is the server's ({@code INFO memory}: used and maximum memory; {@code DBSIZE}),
 * shared with whatever else the Redis holds.
 *
 * <p>Thread-safe: Lettuce connections are, and every operation is a single atomic command or
 * script on one key.
 */
public final class RedisIdempotencyStore implements IdempotencyStore, StoreInspection, AutoCloseable {

    /** The record format, its first byte. */
    static final byte FORMAT = 2;
    static final byte IN_PROGRESS = 'P';
    static final byte COMPLETED = 'C';
    static final byte RELEASED = 'R';
    private static final int STATE = 1;
    private static final int TOKEN = 2;
    private static final int DEADLINE = 10;
    private static final int FINGERPRINT_LENGTH = 18;
    private static final int FINGERPRINT = 20;

    /*
     * The acquire of Redis before 7.0. KEYS[1] record. ARGV[1] the new in-progress record, ARGV[2] its TTL (ms).
     * Returns nil when it created the record, else the record found (unchanged).
     */
    static final RedisScript CREATE = new RedisScript("acquire", """
        local v = redis.call('GET', KEYS[1])
        if v then
          return v
        end
        redis.call('SET', KEYS[1], ARGV[1], 'PX', ARGV[2])
        return false
        """, ScriptOutputType.VALUE);

    /*
     * KEYS[1] record. ARGV[1] the new in-progress record (with the caller's token), ARGV[2] now (ms), ARGV[3] TTL (ms).
     * Returns {1, token, takeover 0|1} when it wrote the record, {0, record} when the record found is live.
     */
    static final RedisScript TAKE_OVER = new RedisScript("take over", """
        local v = redis.call('GET', KEYS[1])
        local token = struct.unpack('>i8', ARGV[1], 3)
        local takeover = 0
        if v then
          local state = string.sub(v, 2, 2)
          if state ~= 'R' and tonumber(ARGV[2]) < struct.unpack('>i8', v, 11) then
            return {0, v}
          end
          local previous = struct.unpack('>i8', v, 3)
          if previous >= token then
            token = previous + 1
          end
          if state == 'P' then
            takeover = 1
          end
        end
        redis.call('SET', KEYS[1], string.sub(ARGV[1], 1, 2) .. struct.pack('>i8', token) .. string.sub(ARGV[1], 11),
          'PX', ARGV[3])
        return {1, token, takeover}
        """, ScriptOutputType.MULTI);

    /*
     * KEYS[1] record. ARGV[1] token (8 bytes), ARGV[2] retention deadline (8 bytes), ARGV[3] status, omitted, headers
     * and body as laid out after the fingerprint, ARGV[4] TTL (ms). Returns 1 when stored, 0 when the token no longer
     * matches an in-progress record.
     */
    static final RedisScript COMPLETE = new RedisScript("complete", """
        local v = redis.call('GET', KEYS[1])
        if not v or string.sub(v, 2, 2) ~= 'P' or string.sub(v, 3, 10) ~= ARGV[1] then
          return 0
        end
        local fingerprint = string.sub(v, 19, 20 + string.byte(v, 19) * 256 + string.byte(v, 20))
        redis.call('SET', KEYS[1], string.sub(v, 1, 1) .. 'C' .. ARGV[1] .. ARGV[2] .. fingerprint .. ARGV[3],
          'PX', ARGV[4])
        return 1
        """, ScriptOutputType.INTEGER);

    /* KEYS[1] record. ARGV[1] token (8 bytes), ARGV[2] lease deadline (8 bytes), ARGV[3] TTL (ms). */
    static final RedisScript RENEW = new RedisScript("renew", """
        local v = redis.call('GET', KEYS[1])
        if not v or string.sub(v, 2, 2) ~= 'P' or string.sub(v, 3, 10) ~= ARGV[1] then
          return 0
        end
        redis.call('SETRANGE', KEYS[1], 10, ARGV[2])
        redis.call('PEXPIRE', KEYS[1], ARGV[3])
        return 1
        """, ScriptOutputType.INTEGER);

    /* KEYS[1] record. ARGV[1] token (8 bytes), ARGV[2] the tombstone's TTL (ms), 0 for none. */
    static final RedisScript RELEASE = new RedisScript("release", """
        local v = redis.call('GET', KEYS[1])
        if not v or string.sub(v, 2, 2) ~= 'P' or string.sub(v, 3, 10) ~= ARGV[1] then
          return 0
        end
        if ARGV[2] == '0' then
          redis.call('DEL', KEYS[1])
        else
          redis.call('SET', KEYS[1], string.sub(v, 1, 1) .. 'R' .. string.sub(v, 3, 18), 'PX', ARGV[2])
        end
        return 1
        """, ScriptOutputType.INTEGER);

    /*
     * KEYS[1] record, KEYS[2] its steps (a hash). ARGV[1] token (8 bytes), ARGV[2] step name, ARGV[3] result,
     * ARGV[4] keep deadline (8 bytes), ARGV[5] now (8 bytes), ARGV[6] TTL (ms). The hash's field "" holds the
     * latest deadline of its steps; 8-byte big-endian times compare as strings. Returns 1 when recorded (now or
     * before), 0 when the token no longer holds an in-progress record.
     */
    static final RedisScript RECORD_STEP = new RedisScript("record step", """
        local v = redis.call('GET', KEYS[1])
        if not v or string.sub(v, 2, 2) ~= 'P' or string.sub(v, 3, 10) ~= ARGV[1] then
          return 0
        end
        local deadline = redis.call('HGET', KEYS[2], '')
        if deadline and deadline <= ARGV[5] then
          redis.call('DEL', KEYS[2])
          deadline = false
        end
        redis.call('HSETNX', KEYS[2], ARGV[2], ARGV[3])
        if not deadline or deadline < ARGV[4] then
          redis.call('HSET', KEYS[2], '', ARGV[4])
        end
        if redis.call('PTTL', KEYS[2]) < tonumber(ARGV[6]) then
          redis.call('PEXPIRE', KEYS[2], ARGV[6])
        end
        return 1
        """, ScriptOutputType.INTEGER);

    /* KEYS[1] record, KEYS[2] its steps. ARGV[1] token (8 bytes). Returns 1 when discarded, 0 when fenced. */
    static final RedisScript DISCARD_STEPS = new RedisScript("discard steps", """
        local v = redis.call('GET', KEYS[1])
        if not v or string.sub(v, 2, 2) ~= 'P' or string.sub(v, 3, 10) ~= ARGV[1] then
          return 0
        end
        redis.call('DEL', KEYS[2])
        return 1
        """, ScriptOutputType.INTEGER);

    private static final long MAX_TICK_NANOS = TimeUnit.MILLISECONDS.toNanos(50);
    /** The most records one inspection walk reads before it stops. */
    static final long INSPECTION_SCAN_LIMIT = 1_000_000;
    /** A record's fixed part plus the longest fingerprint the filter sends, and the response's fixed part. */
    private static final int INSPECTED_PREFIX = FINGERPRINT + 64 + 7;

    private static final Logger LOG = LoggerFactory.getLogger(RedisIdempotencyStore.class);

    private final Clock clock;
    private final String keyPrefix;
    /** {@code keyPrefix} and the opening brace, in UTF-8: the start of every record's key. */
    private final byte[] keyHead;
    private final Duration lateCompletionWindow;
    private final Duration expiryGrace;
    private final RedisConnector connector;
    private final String description;
    /** Whether the server takes SET with NX and GET together (Redis 7.0+); learnt from the first refusal. */
    private volatile boolean setNxGet = true;
    /** The {@code WAIT} behind each write, or {@code null} when {@code wait-replicas} is 0. */
    private final ReplicaWait replicaWait;
    /** Writes kept although fewer replicas than {@code wait-replicas} confirmed them. */
    private final AtomicLong underReplicatedWrites = new AtomicLong();

    /**
     * Creates the store; performs no I/O (the connections are opened on first use).
     *
     * @param client        the application's {@link RedisClient} or {@link RedisClusterClient}, whose
     *                      resources and options the store's own connections share; not changed or
     *                      closed by the store
     * @param uris          the Redis server (one URI for a standalone client) or the cluster's seed
     *                      nodes
     * @param clock         the time source for leases and retention
     * @param configuration key prefix, timeouts, TTL margins and connections
     */
    public RedisIdempotencyStore(AbstractRedisClient client, List<RedisURI> uris, Clock clock,
                                 RedisIdempotencyStoreConfiguration configuration) {
        Objects.requireNonNull(client, "client");
        Objects.requireNonNull(uris, "uris");
        this.clock = Objects.requireNonNull(clock, "clock");
        Objects.requireNonNull(configuration, "configuration");
        this.keyPrefix = configuration.getKeyPrefix();
        this.keyHead = (keyPrefix + "{").getBytes(StandardCharsets.UTF_8);
        this.lateCompletionWindow = configuration.getLateCompletionWindow();
        this.expiryGrace = configuration.getExpiryGrace();
        int waitReplicas = configuration.getWaitReplicas();
        if (waitReplicas > 0 && configuration.getWaitTimeout().compareTo(configuration.getCommandTimeout()) >= 0) {
            throw new IllegalArgumentException(RedisIdempotencyStoreConfigurationProperties.PREFIX + ".wait-timeout ("
                + configuration.getWaitTimeout().toMillis() + " ms) must be shorter than "
                + RedisIdempotencyStoreConfigurationProperties.PREFIX + ".command-timeout ("
                + configuration.getCommandTimeout().toMillis() + " ms), which bounds a write and its WAIT together:"
                + " shorten the one or lengthen the other");
        }
        CommandDeadlines deadlines = new CommandDeadlines(configuration.getCommandTimeout());
        long tick = Math.max(TimeUnit.MILLISECONDS.toNanos(1),
            Math.min(MAX_TICK_NANOS, configuration.getCommandTimeout().toNanos() / 10));
        this.connector = new RedisConnector(client, uris, deadlines, tick, configuration.isEventLoopConnections(),
            configuration.getReconnectDelayMax());
        this.replicaWait = waitReplicas == 0 ? null
            : new ReplicaWait(waitReplicas, configuration.getWaitTimeout(), connector::topologyStale);
        this.description = "Redis " + (client instanceof RedisClusterClient ? "Cluster at " : "at ")
            + uris.stream().map(RedisIdempotencyStore::where).collect(Collectors.joining(","))
            + ", keys " + keyPrefix + "{...}, command timeout " + configuration.getCommandTimeout().toMillis() + " ms"
            + (replicaWait == null ? "" : ", writes confirmed by " + waitReplicas + " replica(s) within "
                + replicaWait.timeoutMillis() + " ms")
            + (connector.perLoop() ? ", a connection per event loop of Lettuce's transport ("
                + RedisConnector.lettuceChannel() + ")" : "");
    }

    @Override
    public String describe() {
        return description;
    }

    /** @return where {@code uri} points: host and port, the socket, or the sentinels and the master's name */
    private static String where(RedisURI uri) {
        if (!uri.getSentinels().isEmpty()) {
            return "the primary '" + uri.getSentinelMasterId() + "' of sentinels " + uri.getSentinels().stream()
                .map(s -> s.getHost() + ":" + s.getPort()).collect(Collectors.joining(","));
        }
        return uri.getHost() == null ? String.valueOf(uri.getSocket()) : uri.getHost() + ":" + uri.getPort();
    }

    /**
     * @return how many writes (completions, renewals, steps) the store kept although fewer
     *     replicas than {@code wait-replicas} confirmed them, each logged: a failover before the
     *     replicas caught up would have lost them. Always 0 with {@code wait-replicas=0}.
     */
    public long underReplicatedWrites() {
        return underReplicatedWrites.get();
    }

    /** One {@code PING} on the calling thread's connection: the probe's round trip (O2). */
    @Override
    public CompletionStage<Map<String, Object>> probe() {
        return run(connector.link(), "ping", c -> c.ping().toCompletableFuture().<Object>thenApply(v -> v),
            reply -> Map.of("ping", String.valueOf(reply)));
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

    @Override
    public CompletionStage<AcquireResult> acquire(String storeKey, byte[] fingerprint, Duration lease) {
        Objects.requireNonNull(storeKey, "storeKey");
        Objects.requireNonNull(fingerprint, "fingerprint");
        Checks.positive(lease, "lease");
        if (fingerprint.length > 0xFFFF) {
            throw new IllegalArgumentException("a fingerprint is at most 65535 bytes, was " + fingerprint.length);
        }
        long now = clock.millis();
        long token = (now << 10) | ThreadLocalRandom.current().nextInt(1024);
        byte[] record = inProgressRecord(token, now + lease.toMillis(), fingerprint);
        byte[] key = recordKey(storeKey);
        long ttl = lease.plus(lateCompletionWindow).toMillis();
        // the connection of the calling thread; the take-over below follows on the same one, not on
        // whichever thread the first reply completed
        RedisConnector.Link link = connector.link();
        return create(link, key, record, ttl).thenCompose(created -> {
            if (replyOf(created) == ReplicaWait.NOT_SENT) {
                return confirmed(storeKey, token, created, null);
            }
            byte[] found = (byte[]) replyOf(created);
            if (found == null) {
                return confirmed(storeKey, token, created, new AcquireResult.Acquired(token, false));
            }
            AcquireResult live;
            try {
                live = decide(storeKey, found, fingerprint, now);
            } catch (IOException | RuntimeException e) {
                return CompletableFuture.failedFuture(new IdempotencyStoreException(
                    "Redis idempotency store: the reply of acquire could not be decoded: " + e.getMessage(), e));
            }
            if (live != null) {
                return CompletableFuture.completedFuture(live);
            }
            // the record found is over (lease or retention ended, or released): take it over
            return run(link, TAKE_OVER.name(), written(link, key, true, c -> TAKE_OVER.execute(c, new byte[][] {key}, record,
                    decimal(now), decimal(ttl))), reply -> reply)
                .thenCompose(reply -> {
                    if (replyOf(reply) == ReplicaWait.NOT_SENT) {
                        return confirmed(storeKey, token, reply, null);
                    }
                    AcquireResult result;
                    try {
                        result = takenOver(storeKey, replyOf(reply), fingerprint, now);
                    } catch (IOException | RuntimeException e) {
                        return CompletableFuture.failedFuture(new IdempotencyStoreException("Redis idempotency store:"
                            + " the reply of " + TAKE_OVER.name() + " could not be decoded: " + e.getMessage(), e));
                    }
                    return result instanceof AcquireResult.Acquired acquired
                        ? confirmed(storeKey, acquired.fencingToken(), reply, result)
                        : CompletableFuture.completedFuture(result);
                });
        });
    }

    /**
     * An acquire that wrote its record: answered when enough replicas have it ({@code wait-replicas}),
     * else failed closed. The record is released (where the primary still is), so the key is free
     * for the retry, and the handler does not run: a failover before a replica had the record
     * would let a retry run it a second time.
     */
    private CompletableFuture<AcquireResult> confirmed(String storeKey, long token, Object reply, AcquireResult acquired) {
        if (replicaWait == null) {
            return CompletableFuture.completedFuture(acquired);
        }
        ReplicaWait.Written written = (ReplicaWait.Written) reply;
        boolean sent = written.reply() != ReplicaWait.NOT_SENT;
        if (sent && replicaWait.confirmed(written)) {
            return CompletableFuture.completedFuture(acquired);
        }
        String what = written.waited() ? "the acquire of " + recordKeyText(storeKey) + " was confirmed by "
            + confirmations(written) + " within " + replicaWait.timeoutMillis() + " ms"
            : "the acquire of " + recordKeyText(storeKey) + " was not sent: the primary's last WAIT, less than "
            + ReplicaWait.SHORT_PROBE_MILLIS + " ms ago, was confirmed by " + confirmations(written);
        String prefix = "Redis idempotency store: " + what + " (" + RedisIdempotencyStoreConfigurationProperties.PREFIX
            + ".wait-replicas=" + replicaWait.replicas() + "), so a failover could lose it: ";
        String advice = ". Retry later; if it lasts, check the replicas (INFO replication on the primary) or lower"
            + " wait-replicas";
        if (!sent) {
            return CompletableFuture.failedFuture(new IdempotencyStoreException(prefix + "the request is not run" + advice));
        }
        // released before the refusal is answered, so the retry finds the key free; when the release
        // fails too (the primary died), the filter goes on releasing it in the background
        return release(storeKey, token).toCompletableFuture().<AcquireResult>handle((released, failure) -> {
            if (failure != null) {
                throw new UnconfirmedAcquireException(prefix + "the request is not run, and its record's release is"
                    + " pending (" + cause(failure) + "): the filter retries it until it lands or the lease ends"
                    + advice, storeKey, token, false, cause(failure));
            }
            throw new UnconfirmedAcquireException(prefix + "the record is released and the request not run" + advice,
                storeKey, token, true, null);
        });
    }

    /** @return "k of N replicas", or why the WAIT failed */
    private String confirmations(ReplicaWait.Written written) {
        return written.waitFailure() != null ? "no replica (WAIT failed: " + written.waitFailure() + ")"
            : written.replicas() + " of " + replicaWait.replicas() + " replica(s)";
    }

    /**
     * {@code write}, with a {@code WAIT} behind it when {@code wait-replicas} is set: then the reply
     * is a {@link ReplicaWait.Written}, which with {@code unlessShort} is not sent at all while
     * its connection is known to be short of replicas.
     */
    private Command written(RedisConnector.Link link, byte[] key, boolean unlessShort, Command write) {
        return replicaWait == null ? write : c -> replicaWait.send(c, key, unlessShort, write::send, link::atTurnEnd);
    }

    /** @return the write's own reply, with or without a {@code WAIT} behind it */
    private static Object replyOf(Object reply) {
        return reply instanceof ReplicaWait.Written w ? w.reply() : reply;
    }

    /**
     * Sends a write the record's result depends on ({@code complete}, {@code renew}, a step) with
     * the {@code WAIT} for replicas behind it. A write that fewer replicas confirmed is waited
     * for twice more on the same connection; then it stands, and is logged and counted with what
     * a failover would lose. A {@code WAIT} that fails (the connection was lost: the primary may
     * have failed over) leaves unknown whether any replica has the write, so the call fails and
     * its caller sends the write again (the filter retries a completion with backoff), to
     * whichever primary answers by then.
     *
     * @return whether the script wrote (its reply was 1)
     */
    private CompletableFuture<Boolean> durable(String storeKey, String name, Command write, String loss) {
        RedisConnector.Link link = connector.link();
        byte[] key = recordKey(storeKey);
        return run(link, name, written(link, key, false, write), reply -> reply).thenCompose(reply -> {
            boolean wrote = isOne(replyOf(reply));
            if (replicaWait == null || !wrote) {
                return CompletableFuture.completedFuture(wrote);
            }
            return replicated(link, storeKey, name, loss, (ReplicaWait.Written) reply, 2);
        });
    }

    private CompletableFuture<Boolean> replicated(RedisConnector.Link link, String storeKey, String name,
                                                  String loss, ReplicaWait.Written written, int waitsLeft) {
        if (replicaWait.confirmed(written)) {
            return CompletableFuture.completedFuture(true);
        }
        if (written.waitFailure() != null) {
            return CompletableFuture.failedFuture(new IdempotencyStoreException("Redis idempotency store: " + name
                + " of " + recordKeyText(storeKey) + " was written, but the WAIT for its replicas failed ("
                + written.waitFailure() + "), so whether a replica has it is unknown: it fails, to be sent again",
                written.waitFailure()));
        }
        if (waitsLeft > 0 && written.waited()) {
            return run(link, "wait", c -> replicaWait.again(written), reply -> (ReplicaWait.Written) reply)
                .handle((again, failure) -> again != null ? again
                    : new ReplicaWait.Written(null, written.target(), -1, cause(failure), true))
                .thenCompose(again -> replicated(link, storeKey, name, loss, again, waitsLeft - 1));
        }
        underReplicatedWrites.incrementAndGet();
        LOG.warn("idempotency Redis store: {} of {} is on the primary, but only {} confirmed it ({}; wait-replicas={})."
            + " If the primary fails before a replica has it, {}. Check the replicas' lag (INFO replication on the"
            + " primary)", name, recordKeyText(storeKey), confirmations(written), written.waited()
                ? "after three waits of " + replicaWait.timeoutMillis() + " ms"
                : "not waited for: the primary's last WAIT, less than " + ReplicaWait.SHORT_PROBE_MILLIS
                    + " ms ago, came back short", replicaWait.replicas(), loss);
        return CompletableFuture.completedFuture(true);
    }

    /**
     * {@code SET NX GET}, or the script that does the same on Redis before 7.0: null when created,
     * else the record (in a {@link ReplicaWait.Written} when replicas are waited for).
     */
    private CompletableFuture<Object> create(RedisConnector.Link link, byte[] key, byte[] record, long ttl) {
        if (setNxGet) {
            SetArgs args = SetArgs.Builder.nx().px(ttl);
            return run(link, "acquire", written(link, key, true, c -> c.setGet(key, record, args).toCompletableFuture()
                    .<Object>thenApply(v -> v)), reply -> reply, failure -> {
                    // not only the first refusal: every call sent before the store learnt it is refused too
                    if (failure instanceof RedisCommandExecutionException e
                        && String.valueOf(e.getMessage()).contains("syntax error")) {
                        setNxGet = false; // SET with NX and GET together came with Redis 7.0
                        return create(link, key, record, ttl);
                    }
                    return null;
                });
        }
        return run(link, CREATE.name(), written(link, key, true, c -> CREATE.execute(c, new byte[][] {key}, record, decimal(ttl))),
            reply -> reply);
    }

    /** @return what a live record answers (replay, mismatch, in progress), or {@code null} when it is over */
    private AcquireResult decide(String storeKey, byte[] record, byte[] fingerprint, long now) throws IOException {
        checkFormat(storeKey, record, TOKEN + 16);
        byte state = record[STATE];
        long deadline = readLong(record, DEADLINE);
        if (state == RELEASED || now >= deadline) {
            return null;
        }
        if (state != IN_PROGRESS && state != COMPLETED) {
            throw new IOException("record " + recordKeyText(storeKey) + ": unknown state " + state);
        }
        checkFormat(storeKey, record, FINGERPRINT);
        int n = readShort(record, FINGERPRINT_LENGTH);
        checkFormat(storeKey, record, FINGERPRINT + n);
        if (!Arrays.equals(record, FINGERPRINT, FINGERPRINT + n, fingerprint, 0, fingerprint.length)) {
            return new AcquireResult.Mismatch();
        }
        if (state == IN_PROGRESS) {
            return new AcquireResult.InProgress(Duration.ofMillis(deadline - now));
        }
        return new AcquireResult.Replay(decodeResponse(storeKey, record, FINGERPRINT + n));
    }

    @SuppressWarnings("unchecked")
    private AcquireResult takenOver(String storeKey, Object value, byte[] fingerprint, long now) throws IOException {
        List<Object> reply = (List<Object>) value;
        if (Long.valueOf(1L).equals(reply.get(0))) {
            return new AcquireResult.Acquired((Long) reply.get(1), Long.valueOf(1L).equals(reply.get(2)));
        }
        AcquireResult live = decide(storeKey, (byte[]) reply.get(1), fingerprint, now);
        if (live == null) {
            throw new IOException("record " + recordKeyText(storeKey) + ": the take-over found a live record that is over");
        }
        return live;
    }

    @Override
    public CompletionStage<Boolean> complete(String storeKey, long fencingToken, StoredResponse response,
                                             Duration retention) {
        Objects.requireNonNull(storeKey, "storeKey");
        Objects.requireNonNull(response, "response");
        Checks.positive(retention, "retention");
        long now = clock.millis();
        byte[] ttl = decimal(retention.plus(expiryGrace).toMillis());
        byte[] rest = StoredResponseCodec.encode(response);
        return durable(storeKey, COMPLETE.name(), c -> COMPLETE.execute(c, new byte[][] {recordKey(storeKey)},
            longBytes(fencingToken), longBytes(now + retention.toMillis()), rest, ttl),
            "the record is back in progress as acquired, and once its lease ends a retry runs the handler again");
    }

    @Override
    public CompletionStage<Boolean> release(String storeKey, long fencingToken) {
        Objects.requireNonNull(storeKey, "storeKey");
        byte[] ttl = decimal(expiryGrace.toMillis());
        return run(connector.link(), RELEASE.name(), c -> RELEASE.execute(c, new byte[][] {recordKey(storeKey)}, longBytes(fencingToken),
            ttl), RedisIdempotencyStore::isOne);
    }

    @Override
    public CompletionStage<Boolean> renew(String storeKey, long fencingToken, Duration lease) {
        Objects.requireNonNull(storeKey, "storeKey");
        Checks.positive(lease, "lease");
        long now = clock.millis();
        byte[] ttl = decimal(lease.plus(lateCompletionWindow).toMillis());
        return durable(storeKey, RENEW.name(), c -> RENEW.execute(c, new byte[][] {recordKey(storeKey)},
            longBytes(fencingToken), longBytes(now + lease.toMillis()), ttl),
            "the lease ends at its earlier deadline, and a retry after it may take the key over while the handler"
                + " still runs");
    }

    /** One {@code HGETALL} of the record's steps hash; steps past their deadline (by the injected clock) count as none. */
    @Override
    public CompletionStage<Map<String, byte[]>> steps(String storeKey) {
        Objects.requireNonNull(storeKey, "storeKey");
        byte[] key = stepsKey(storeKey);
        long now = clock.millis();
        return run(connector.link(), "steps", c -> c.hgetall(key).toCompletableFuture().thenApply(m -> (Object) m),
            reply -> {
                @SuppressWarnings("unchecked")
                Map<byte[], byte[]> fields = (Map<byte[], byte[]>) reply;
                Map<String, byte[]> found = new LinkedHashMap<>();
                long deadline = Long.MIN_VALUE;
                for (Map.Entry<byte[], byte[]> e : fields.entrySet()) {
                    if (e.getKey().length == 0) {
                        deadline = readLong(e.getValue(), 0);
                    } else {
                        found.put(new String(e.getKey(), StandardCharsets.UTF_8), e.getValue());
                    }
                }
                return deadline > now ? found : Map.of();
            });
    }

    /** One script call: checks the holder's token on the record, then writes the step into its hash (same hash slot). */
    @Override
    public CompletionStage<Boolean> recordStep(String storeKey, long fencingToken, String step, byte[] result,
                                               Duration keep) {
        Objects.requireNonNull(storeKey, "storeKey");
        Objects.requireNonNull(step, "step");
        Objects.requireNonNull(result, "result");
        Checks.positive(keep, "keep");
        long now = clock.millis();
        byte[] ttl = decimal(keep.plus(expiryGrace).toMillis());
        return durable(storeKey, RECORD_STEP.name(), c -> RECORD_STEP.execute(c,
            new byte[][] {recordKey(storeKey), stepsKey(storeKey)}, longBytes(fencingToken),
            step.getBytes(StandardCharsets.UTF_8), result, longBytes(now + keep.toMillis()), longBytes(now), ttl),
            "the step '" + step + "' is gone, and a retry runs it again");
    }

    @Override
    public CompletionStage<Boolean> discardSteps(String storeKey, long fencingToken) {
        Objects.requireNonNull(storeKey, "storeKey");
        return run(connector.link(), DISCARD_STEPS.name(), c -> DISCARD_STEPS.execute(c,
            new byte[][] {recordKey(storeKey), stepsKey(storeKey)}, longBytes(fencingToken)), RedisIdempotencyStore::isOne);
    }

    /** @return the key of the record's steps: {@code P{K}:steps}, in the record's hash slot */
    private byte[] stepsKey(String storeKey) {
        return (recordKeyText(storeKey) + ":steps").getBytes(StandardCharsets.UTF_8);
    }

    @Override
    public CompletionStage<Optional<RecordInfo>> find(String storeKey) {
        Objects.requireNonNull(storeKey, "storeKey");
        return inspect(connector.link(), recordKey(storeKey)).thenApply(Optional::ofNullable);
    }

    @Override
    public CompletionStage<RecordCounts> counts() {
        RedisConnector.Link link = connector.link();
        long now = clock.millis();
        long[] counts = new long[4];
        return walk(link, info -> {
            boolean over = info.state() == RecordInfo.State.RELEASED || now >= info.deadline().toEpochMilli();
            counts[info.state() == RecordInfo.State.IN_PROGRESS ? (over ? 1 : 0) : (over ? 3 : 2)]++;
        }).thenCompose(complete -> size(link).thenApply(size ->
            new RecordCounts(counts[0], counts[1], counts[2], counts[3], complete, size)));
    }

    @Override
    public CompletionStage<List<RecordInfo>> inProgressStartedBefore(Instant startedBefore, int limit) {
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
     * at a time), up to {@value #INSPECTION_SCAN_LIMIT} records.
     *
     * @return whether the walk saw the whole key space
     */
    private CompletableFuture<Boolean> walk(RedisConnector.Link link, Consumer<RecordInfo> sink) {
        ScanArgs args = ScanArgs.Builder.matches(globEscape(keyPrefix) + "{*}").limit(1000);
        return page(link, ScanCursor.INITIAL, args, sink, 0);
    }

    private CompletableFuture<Boolean> page(RedisConnector.Link link, ScanCursor cursor, ScanArgs args,
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
                    if (total >= INSPECTION_SCAN_LIMIT) {
                        return CompletableFuture.completedFuture(false);
                    }
                    return page(link, keys, args, sink, total);
                });
            });
    }

    /** One record's state and timing from its first bytes and its length; {@code null} when it is gone. */
    private CompletableFuture<RecordInfo> inspect(RedisConnector.Link link, byte[] key) {
        CompletableFuture<byte[]> head = run(link, "getrange", c -> c.getrange(key, 0, INSPECTED_PREFIX - 1)
            .toCompletableFuture().<Object>thenApply(v -> v), reply -> (byte[]) reply);
        CompletableFuture<Long> length = run(link, "strlen", c -> c.strlen(key).toCompletableFuture()
            .<Object>thenApply(v -> v), reply -> (Long) reply);
        return head.thenCombine(length, (bytes, total) -> {
            if (bytes == null || bytes.length == 0) {
                return null;
            }
            String text = new String(key, StandardCharsets.UTF_8);
            String storeKey = text.substring(keyPrefix.length() + 1, text.length() - 1);
            try {
                return recordInfo(storeKey, bytes, total);
            } catch (IOException e) {
                throw new CompletionException(new IdempotencyStoreException(
                    "Redis idempotency store: cannot read " + text + ": " + e.getMessage(), e));
            }
        });
    }

    private RecordInfo recordInfo(String storeKey, byte[] head, long length) throws IOException {
        checkFormat(storeKey, head, TOKEN + 16);
        long token = readLong(head, TOKEN);
        Instant startedAt = Instant.ofEpochMilli(token >> 10);
        Instant deadline = Instant.ofEpochMilli(readLong(head, DEADLINE));
        return switch (head[STATE]) {
            case IN_PROGRESS -> new RecordInfo(storeKey, RecordInfo.State.IN_PROGRESS, token, startedAt, deadline, 0, -1);
            case RELEASED -> new RecordInfo(storeKey, RecordInfo.State.RELEASED, token, startedAt, deadline, 0, -1);
            case COMPLETED -> {
                checkFormat(storeKey, head, FINGERPRINT);
                int at = FINGERPRINT + readShort(head, FINGERPRINT_LENGTH);
                try {
                    yield new RecordInfo(storeKey, RecordInfo.State.COMPLETED, token, startedAt, deadline,
                        StoredResponseCodec.status(head, at), StoredResponseCodec.bodyLength(head, at, length - at));
                } catch (IllegalArgumentException e) {
                    throw new IOException("record " + recordKeyText(storeKey) + ": " + e.getMessage(), e);
                }
            }
            default -> throw new IOException("unknown state " + head[STATE]);
        };
    }

    /** The server's memory ({@code INFO memory}) and key count ({@code DBSIZE}). */
    private CompletableFuture<Map<String, Object>> size(RedisConnector.Link link) {
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

    /** Closes the store's own connections and clients (not the application's client). */
    @Override
    public void close() {
        connector.close();
    }

    /** @return the application's client the store's connections borrow from (for the startup check) */
    AbstractRedisClient applicationClient() {
        return connector.applicationClient();
    }

    /** @return the Redis server, sentinels or cluster seed nodes the store connects to */
    List<RedisURI> uris() {
        return connector.uris();
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

    /** @return the store's open connections: the shared one first, if open, then the event loops' (for tests) */
    List<StatefulConnection<byte[], byte[]>> connections() {
        return connector.connections();
    }

    /** @return the event loops whose calls go out on a connection of their own (for tests) */
    Set<EventExecutor> loopsWithOwnConnection() {
        return connector.loopsWithOwnConnection();
    }

    /** @return the Redis key of the record of {@code storeKey} */
    String recordKeyText(String storeKey) {
        return keyPrefix + "{" + storeKey + "}";
    }

    /**
     * @return {@link #recordKeyText} in UTF-8, built in one array when the store key is ASCII (the
     *     filter's always are: every acquire and completion comes through here), else encoded
     */
    private byte[] recordKey(String storeKey) {
        int n = storeKey.length();
        byte[] key = new byte[keyHead.length + n + 1];
        System.arraycopy(keyHead, 0, key, 0, keyHead.length);
        for (int i = 0; i < n; i++) {
            char c = storeKey.charAt(i);
            if (c >= 0x80) {
                return recordKeyText(storeKey).getBytes(StandardCharsets.UTF_8);
            }
            key[keyHead.length + i] = (byte) c;
        }
        key[key.length - 1] = '}';
        return key;
    }

    /** One Redis call of the store, given the connection's commands. */
    @FunctionalInterface
    private interface Command {
        CompletableFuture<Object> send(RedisClusterAsyncCommands<byte[], byte[]> commands);
    }

    /** A decoder of a reply; may throw {@link IOException} for a record it cannot read. */
    @FunctionalInterface
    private interface Decoder<T> {
        T decode(Object reply) throws IOException;
    }

    /** What to do instead when a command fails: another stage, or {@code null} to fail the call. */
    @FunctionalInterface
    private interface Recovery<T> {
        CompletableFuture<T> recover(Throwable failure);
    }

    private <T> CompletableFuture<T> run(RedisConnector.Link link, String name, Command command, Decoder<T> decoder) {
        return run(link, name, command, decoder, failure -> null);
    }

    /**
     * Sends {@code command} on {@code link}'s connection and decodes its reply; the stage
     * fails with an {@link IdempotencyStoreException} on any failure, and when no answer came
     * within the command timeout.
     */
    private <T> CompletableFuture<T> run(RedisConnector.Link link, String name, Command command, Decoder<T> decoder,
                                         Recovery<T> recovery) {
        CompletableFuture<T> result = new CompletableFuture<>();
        link.track(result);
        CompletableFuture<RedisClusterAsyncCommands<byte[], byte[]>> commands = link.commands();
        if (commands.isDone() && !commands.isCompletedExceptionally()) {
            RedisClusterAsyncCommands<byte[], byte[]> c = commands.join();
            link.dispatch(() -> send(name, c, command, decoder, recovery, result));
        } else {
            commands.whenComplete((c, failure) -> {
                if (failure != null) {
                    result.completeExceptionally(new IdempotencyStoreException(
                        "Redis idempotency store: cannot connect: " + cause(failure), cause(failure)));
                } else {
                    link.dispatch(() -> send(name, c, command, decoder, recovery, result));
                }
            });
        }
        return result;
    }

    private <T> void send(String name, RedisClusterAsyncCommands<byte[], byte[]> commands, Command command,
                          Decoder<T> decoder, Recovery<T> recovery, CompletableFuture<T> result) {
        CompletableFuture<Object> reply;
        try {
            reply = command.send(commands);
        } catch (RuntimeException e) {
            reply = CompletableFuture.failedFuture(e);
        }
        reply.whenComplete((value, failure) -> {
            if (failure != null) {
                Throwable cause = cause(failure);
                CompletableFuture<T> instead = recovery.recover(cause);
                if (instead != null) {
                    instead.whenComplete((v, f) -> {
                        if (f != null) {
                            result.completeExceptionally(cause(f));
                        } else {
                            result.complete(v);
                        }
                    });
                    return;
                }
                result.completeExceptionally(new IdempotencyStoreException("Redis idempotency store: " + name
                    + " failed: " + cause, cause));
                return;
            }
            try {
                result.complete(decoder.decode(value));
            } catch (IOException | RuntimeException e) {
                result.completeExceptionally(new IdempotencyStoreException("Redis idempotency store: the reply of "
                    + name + " could not be decoded: " + e.getMessage(), e));
            }
        });
    }

    static byte[] inProgressRecord(long token, long deadline, byte[] fingerprint) {
        byte[] r = new byte[FINGERPRINT + fingerprint.length];
        r[0] = FORMAT;
        r[STATE] = IN_PROGRESS;
        writeLong(r, TOKEN, token);
        writeLong(r, DEADLINE, deadline);
        r[FINGERPRINT_LENGTH] = (byte) (fingerprint.length >>> 8);
        r[FINGERPRINT_LENGTH + 1] = (byte) fingerprint.length;
        System.arraycopy(fingerprint, 0, r, FINGERPRINT, fingerprint.length);
        return r;
    }

    private StoredResponse decodeResponse(String storeKey, byte[] record, int at) throws IOException {
        try {
            return StoredResponseCodec.decode(record, at);
        } catch (IllegalArgumentException e) {
            throw new IOException("record " + recordKeyText(storeKey) + ": " + e.getMessage(), e);
        }
    }

    private void checkFormat(String storeKey, byte[] record, int minLength) throws IOException {
        if (record.length < Math.max(minLength, 2) || record[0] != FORMAT) {
            throw new IOException("record " + recordKeyText(storeKey) + " is not a format-" + FORMAT + " record of at least "
                + minLength + " bytes (" + record.length + " bytes, first byte " + (record.length > 0 ? record[0] : -1) + ")");
        }
    }

    private static boolean isOne(Object reply) {
        return Long.valueOf(1L).equals(reply);
    }

    private static Throwable cause(Throwable failure) {
        return failure instanceof CompletionException && failure.getCause() != null ? failure.getCause() : failure;
    }

    private static byte[] decimal(long value) {
        return Long.toString(value).getBytes(StandardCharsets.US_ASCII);
    }

    private static byte[] longBytes(long value) {
        byte[] b = new byte[8];
        writeLong(b, 0, value);
        return b;
    }

    private static void writeLong(byte[] b, int at, long v) {
        for (int i = 7; i >= 0; i--) {
            b[at + i] = (byte) v;
            v >>>= 8;
        }
    }

    static long readLong(byte[] b, int at) {
        long v = 0;
        for (int i = 0; i < 8; i++) {
            v = (v << 8) | (b[at + i] & 0xFF);
        }
        return v;
    }

    private static int readShort(byte[] b, int at) {
        return ((b[at] & 0xFF) << 8) | (b[at + 1] & 0xFF);
    }
}
