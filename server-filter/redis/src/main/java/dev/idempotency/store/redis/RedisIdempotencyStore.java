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
import io.lettuce.core.RedisCommandExecutionException;
import io.lettuce.core.RedisURI;
import io.lettuce.core.SetArgs;
import io.lettuce.core.api.StatefulConnection;
import io.lettuce.core.cluster.RedisClusterClient;
import io.netty.util.concurrent.EventExecutor;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.time.Clock;
import java.time.Duration;
import java.time.Instant;
import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Optional;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.ThreadLocalRandom;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import java.util.stream.Collectors;

import static dev.idempotency.store.redis.RedisCalls.cause;
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
import static dev.idempotency.store.redis.RedisRecords.decimal;
import static dev.idempotency.store.redis.RedisRecords.decodeResponse;
import static dev.idempotency.store.redis.RedisRecords.inProgressRecord;
import static dev.idempotency.store.redis.RedisRecords.inProgressTrace;
import static dev.idempotency.store.redis.RedisRecords.isOne;
import static dev.idempotency.store.redis.RedisRecords.longBytes;
import static dev.idempotency.store.redis.RedisRecords.readLong;
import static dev.idempotency.store.redis.RedisRecords.readShort;
import static dev.idempotency.store.redis.RedisScripts.COMPLETE;
import static dev.idempotency.store.redis.RedisScripts.CREATE;
import static dev.idempotency.store.redis.RedisScripts.DISCARD_STEPS;
import static dev.idempotency.store.redis.RedisScripts.RECORD_STEP;
import static dev.idempotency.store.redis.RedisScripts.RELEASE;
import static dev.idempotency.store.redis.RedisScripts.RENEW;
import static dev.idempotency.store.redis.RedisScripts.TAKE_OVER;

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
 * The key layout, the record's bytes, how deadlines and TTLs relate, where fencing tokens come
 * from, threads, replicas and inspection are described in this package's javadoc.
 *
 * <p>Every call completes its stage on the calling event loop or a Lettuce thread and never blocks;
 * any Redis failure, and any record that cannot be decoded, fails the stage with an
 * {@link IdempotencyStoreException}. Thread-safe: each operation is one atomic command or script on one key.
 */
public final class RedisIdempotencyStore implements IdempotencyStore, StoreInspection, AutoCloseable {

    private static final long MAX_TICK_NANOS = TimeUnit.MILLISECONDS.toNanos(50);

    private static final Logger LOG = LoggerFactory.getLogger(RedisIdempotencyStore.class);

    private final Clock clock;
    private final RedisKeys keys;
    private final Duration lateCompletionWindow;
    private final Duration expiryGrace;
    private final RedisConnector connector;
    private final RedisInspection inspection;
    private final String description;
    private volatile boolean setNxGet = true; // SET with NX and GET together (Redis 7.0+), until the first refusal
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
        this.keys = new RedisKeys(configuration.getKeyPrefix());
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
        this.inspection = new RedisInspection(connector, keys, clock);
        this.replicaWait = waitReplicas == 0 ? null
            : new ReplicaWait(waitReplicas, configuration.getWaitTimeout(), connector::topologyStale);
        this.description = "Redis " + (client instanceof RedisClusterClient ? "Cluster at " : "at ")
            + uris.stream().map(RedisIdempotencyStore::where).collect(Collectors.joining(","))
            + ", keys " + keys.prefix() + "{...}, command timeout " + configuration.getCommandTimeout().toMillis() + " ms"
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

    /** @return Redis's {@code maxmemory-policy} (see {@link RedisInspection#maxmemoryPolicy()}) */
    CompletableFuture<String> maxmemoryPolicy() {
        return inspection.maxmemoryPolicy();
    }

    @Override
    public CompletionStage<AcquireResult> acquire(String storeKey, byte[] fingerprint, Duration lease) {
        return acquire(storeKey, fingerprint, lease, null);
    }

    @Override
    public CompletionStage<AcquireResult> acquire(String storeKey, byte[] fingerprint, Duration lease,
                                                  String traceparent) {
        IdempotencyStore.checkTraceparent(traceparent);
        Objects.requireNonNull(storeKey, "storeKey");
        Objects.requireNonNull(fingerprint, "fingerprint");
        Checks.positive(lease, "lease");
        if (fingerprint.length > 0xFFFF) {
            throw new IllegalArgumentException("a fingerprint is at most 65535 bytes, was " + fingerprint.length);
        }
        long now = clock.millis();
        long token = (now << 10) | ThreadLocalRandom.current().nextInt(1024);
        byte[] record = inProgressRecord(token, now + lease.toMillis(), fingerprint, traceparent);
        byte[] key = keys.record(storeKey);
        long ttl = lease.plus(lateCompletionWindow).toMillis();
        // the connection of the calling thread; the take-over below follows on the same one, not on
        // whichever thread the first reply completed
        RedisLink link = connector.link();
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
        String what = written.waited() ? "the acquire of " + keys.recordText(storeKey) + " was confirmed by "
            + confirmations(written) + " within " + replicaWait.timeoutMillis() + " ms"
            : "the acquire of " + keys.recordText(storeKey) + " was not sent: the primary's last WAIT, less than "
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
    private RedisCalls.Command written(RedisLink link, byte[] key, boolean unlessShort, RedisCalls.Command write) {
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
    private CompletableFuture<Boolean> durable(String storeKey, String name, RedisCalls.Command write, String loss) {
        RedisLink link = connector.link();
        byte[] key = keys.record(storeKey);
        return run(link, name, written(link, key, false, write), reply -> reply).thenCompose(reply -> {
            boolean wrote = isOne(replyOf(reply));
            if (replicaWait == null || !wrote) {
                return CompletableFuture.completedFuture(wrote);
            }
            return replicated(link, storeKey, name, loss, (ReplicaWait.Written) reply, 2);
        });
    }

    private CompletableFuture<Boolean> replicated(RedisLink link, String storeKey, String name,
                                                  String loss, ReplicaWait.Written written, int waitsLeft) {
        if (replicaWait.confirmed(written)) {
            return CompletableFuture.completedFuture(true);
        }
        if (written.waitFailure() != null) {
            return CompletableFuture.failedFuture(new IdempotencyStoreException("Redis idempotency store: " + name
                + " of " + keys.recordText(storeKey) + " was written, but the WAIT for its replicas failed ("
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
            + " primary)", name, keys.recordText(storeKey), confirmations(written), written.waited()
                ? "after three waits of " + replicaWait.timeoutMillis() + " ms"
                : "not waited for: the primary's last WAIT, less than " + ReplicaWait.SHORT_PROBE_MILLIS
                    + " ms ago, came back short", replicaWait.replicas(), loss);
        return CompletableFuture.completedFuture(true);
    }

    /**
     * {@code SET NX GET}, or the script that does the same on Redis before 7.0: null when created,
     * else the record (in a {@link ReplicaWait.Written} when replicas are waited for).
     */
    private CompletableFuture<Object> create(RedisLink link, byte[] key, byte[] record, long ttl) {
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
        checkFormat(keys.recordText(storeKey), record, TOKEN + 16);
        byte state = record[STATE];
        long deadline = readLong(record, DEADLINE);
        if (state == RELEASED || now >= deadline) {
            return null;
        }
        if (state != IN_PROGRESS && state != COMPLETED) {
            throw new IOException("record " + keys.recordText(storeKey) + ": unknown state " + state);
        }
        checkFormat(keys.recordText(storeKey), record, FINGERPRINT);
        int n = readShort(record, FINGERPRINT_LENGTH);
        checkFormat(keys.recordText(storeKey), record, FINGERPRINT + n);
        if (!Arrays.equals(record, FINGERPRINT, FINGERPRINT + n, fingerprint, 0, fingerprint.length)) {
            return new AcquireResult.Mismatch();
        }
        if (state == IN_PROGRESS) {
            return new AcquireResult.InProgress(Duration.ofMillis(deadline - now), inProgressTrace(record, FINGERPRINT + n));
        }
        return new AcquireResult.Replay(decodeResponse(keys.recordText(storeKey), record, FINGERPRINT + n));
    }

    @SuppressWarnings("unchecked")
    private AcquireResult takenOver(String storeKey, Object value, byte[] fingerprint, long now) throws IOException {
        List<Object> reply = (List<Object>) value;
        if (Long.valueOf(1L).equals(reply.get(0))) {
            return new AcquireResult.Acquired((Long) reply.get(1), Long.valueOf(1L).equals(reply.get(2)));
        }
        AcquireResult live = decide(storeKey, (byte[]) reply.get(1), fingerprint, now);
        if (live == null) {
            throw new IOException("record " + keys.recordText(storeKey) + ": the take-over found a live record that is over");
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
        return durable(storeKey, COMPLETE.name(), c -> COMPLETE.execute(c, new byte[][] {keys.record(storeKey)},
            longBytes(fencingToken), longBytes(now + retention.toMillis()), rest, ttl),
            "the record is back in progress as acquired, and once its lease ends a retry runs the handler again");
    }

    @Override
    public CompletionStage<Boolean> release(String storeKey, long fencingToken) {
        Objects.requireNonNull(storeKey, "storeKey");
        byte[] ttl = decimal(expiryGrace.toMillis());
        return run(connector.link(), RELEASE.name(), c -> RELEASE.execute(c, new byte[][] {keys.record(storeKey)}, longBytes(fencingToken),
            ttl), RedisRecords::isOne);
    }

    @Override
    public CompletionStage<Boolean> renew(String storeKey, long fencingToken, Duration lease) {
        Objects.requireNonNull(storeKey, "storeKey");
        Checks.positive(lease, "lease");
        long now = clock.millis();
        byte[] ttl = decimal(lease.plus(lateCompletionWindow).toMillis());
        return durable(storeKey, RENEW.name(), c -> RENEW.execute(c, new byte[][] {keys.record(storeKey)},
            longBytes(fencingToken), longBytes(now + lease.toMillis()), ttl),
            "the lease ends at its earlier deadline, and a retry after it may take the key over while the handler"
                + " still runs");
    }

    /** One {@code HGETALL} of the record's steps hash; steps past their deadline (by the injected clock) count as none. */
    @Override
    public CompletionStage<Map<String, byte[]>> steps(String storeKey) {
        Objects.requireNonNull(storeKey, "storeKey");
        byte[] key = keys.steps(storeKey);
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
            new byte[][] {keys.record(storeKey), keys.steps(storeKey)}, longBytes(fencingToken),
            step.getBytes(StandardCharsets.UTF_8), result, longBytes(now + keep.toMillis()), longBytes(now), ttl),
            "the step '" + step + "' is gone, and a retry runs it again");
    }

    @Override
    public CompletionStage<Boolean> discardSteps(String storeKey, long fencingToken) {
        Objects.requireNonNull(storeKey, "storeKey");
        return run(connector.link(), DISCARD_STEPS.name(), c -> DISCARD_STEPS.execute(c,
            new byte[][] {keys.record(storeKey), keys.steps(storeKey)}, longBytes(fencingToken)), RedisRecords::isOne);
    }

    @Override
    public CompletionStage<Optional<RecordInfo>> find(String storeKey) {
        return inspection.find(storeKey);
    }

    @Override
    public CompletionStage<RecordCounts> counts() {
        return inspection.counts();
    }

    @Override
    public CompletionStage<List<RecordInfo>> inProgressStartedBefore(Instant startedBefore, int limit) {
        return inspection.inProgressStartedBefore(startedBefore, limit);
    }

    /** @return the record's key in Redis for {@code storeKey}, as text */
    String recordKeyText(String storeKey) {
        return keys.recordText(storeKey);
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

    /** @return the fewest replicas of a primary (see {@link RedisInspection#fewestReplicas()}) */
    CompletableFuture<Integer> fewestReplicas() {
        return inspection.fewestReplicas();
    }

    /** @return the store's open connections: the shared one first, if open, then the event loops' (for tests) */
    List<StatefulConnection<byte[], byte[]>> connections() {
        return connector.connections();
    }

    /** @return the event loops whose calls go out on a connection of their own (for tests) */
    Set<EventExecutor> loopsWithOwnConnection() {
        return connector.loopsWithOwnConnection();
    }

}
