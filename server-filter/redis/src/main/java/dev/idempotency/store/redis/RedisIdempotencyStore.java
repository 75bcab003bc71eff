package dev.idempotency.store.redis;

import dev.idempotency.server.Checks;
import dev.idempotency.server.store.AcquireResult;
import dev.idempotency.server.store.IdempotencyStore;
import dev.idempotency.server.store.IdempotencyStoreException;
import dev.idempotency.server.store.StoredResponse;
import io.lettuce.core.AbstractRedisClient;
import io.lettuce.core.RedisClient;
import io.lettuce.core.ScriptOutputType;
import io.lettuce.core.api.StatefulConnection;
import io.lettuce.core.api.StatefulRedisConnection;
import io.lettuce.core.api.sync.RedisScriptingCommands;
import io.lettuce.core.cluster.RedisClusterClient;
import io.lettuce.core.cluster.api.StatefulRedisClusterConnection;
import io.lettuce.core.codec.ByteArrayCodec;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.time.Clock;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;

/**
 * An {@link IdempotencyStore} on Redis, standalone or Redis Cluster, through Lettuce. Every
 * operation is one Lua script call ({@code EVALSHA}, or {@code EVAL} once after the server
 * answers {@code NOSCRIPT}), so acquire and complete are each one round trip and atomic.
 *
 * <h2>Keys</h2>
 * For a store key {@code K} and the configured prefix {@code P} (default {@code idempotency:}):
 * <ul>
 *   <li>{@code P{K}} - the record, a Redis hash (below);</li>
 *   <li>{@code P{K}:token} - the fencing-token counter of {@code K}, a Redis string holding an
 *       integer.</li>
 * </ul>
 * {@code {K}} is a Redis Cluster hash tag: both keys of one record hash to the same slot, as a
 * script's keys must. The prefix may not contain braces. Keys are sent as UTF-8 bytes; store
 * keys are the filter's fixed-length hex hashes, never the client's raw key.
 *
 * <h2>The record ({@code P{K}}, a hash; every field is binary-safe)</h2>
 * <ul>
 *   <li>{@code state} - {@code P} (in progress) or {@code C} (completed);</li>
 *   <li>{@code fp} - the request fingerprint, its 32 raw bytes;</li>
 *   <li>{@code token} - the fencing token of the holder, decimal;</li>
 *   <li>{@code deadline} - epoch milliseconds, by the injected {@link Clock}: the lease end while
 *       in progress, the retention end once completed;</li>
 *   <li>completed records only: {@code status} (decimal, e.g. {@code 201}), {@code omitted}
 *       ({@code 1} when the body was too large or streamed and not kept, else {@code 0}),
 *       {@code body} (the body bytes exactly as sent, possibly empty) and {@code headers}
 *       (version byte {@code 1}, a big-endian int header count, then per header its name, a
 *       big-endian int value count and its values, each string a big-endian int byte length
 *       followed by its UTF-8 bytes; header order and value order are kept).</li>
 * </ul>
 *
 * <h2>Time, deadlines and TTLs</h2>
 * Every decision (is the lease live, is the retention over, how long does the lease still run)
 * compares the {@code deadline} field with "now" read from the injected {@link Clock} and passed
 * to the script, never with Redis' clock, so tests move time instead of sleeping and all
 * instances decide alike. Redis TTLs ({@code PEXPIRE}) only collect garbage, and are relative
 * durations set at each write, so a clock that is offset from real time (or runs faster, like a
 * test clock) never makes a record vanish before its deadline:
 * <ul>
 *   <li>in progress (acquire, renew): TTL = lease + {@code late-completion-window} (default
 *       24 h). The record must outlive its lease: a holder whose lease expired but was not taken
 *       over may still complete or release it (the SPI's late-completion rule), while an acquire
 *       already treats it as absent and takes it over. After the window Redis deletes it and a
 *       very late completion returns {@code false};</li>
 *   <li>completed: TTL = retention + {@code expiry-grace} (default 1 min), so Redis removes it
 *       shortly after its retention (CONTRACT S16); until then an acquire past the deadline treats
 *       it as absent and overwrites it;</li>
 *   <li>released: the record is deleted at once;</li>
 *   <li>token counter: its TTL is raised to the record's whenever the record's is set, so it
 *       lives at least as long as any record it numbered.</li>
 * </ul>
 *
 * <h2>Fencing tokens</h2>
 * The counter {@code P{K}:token} survives releases (which delete the record), so every acquire
 * and takeover of {@code K} gets {@code INCR} of it: strictly increasing per key. When the
 * counter is absent (first use, or after it expired with all its records) it is first set to
 * "now" in epoch milliseconds ({@code SET NX}), so even a counter recreated after a long pause
 * continues above every token it handed out before (unless one key saw more than one acquire
 * per millisecond on average). Tokens therefore look like {@code 1767225600001}.
 *
 * <h2>Connection and failures</h2>
 * The store opens its own connection, with a byte-array codec, from the Lettuce client it is
 * given (a {@link RedisClient} or a {@link RedisClusterClient}) on first use, not in the
 * constructor, and bounds it with {@code command-timeout}: both the connect and every command.
 * Any Lettuce failure (connection refused or lost, timeout, error reply) and any record that
 * cannot be decoded becomes an {@link IdempotencyStoreException}. A failed connect is retried on
 * the next call; an established connection reconnects by itself (Lettuce's reconnect backoff),
 * and commands issued while it is down time out rather than run later.
 *
 * <p>Thread-safe: Lettuce connections are, and every operation is a single atomic script.
 */
public final class RedisIdempotencyStore implements IdempotencyStore, AutoCloseable {

    private static final Logger LOG = LoggerFactory.getLogger(RedisIdempotencyStore.class);

    static final String STATE_IN_PROGRESS = "P";
    static final String STATE_COMPLETED = "C";

    /*
     * KEYS[1] record, KEYS[2] token counter.
     * ARGV[1] fingerprint, ARGV[2] now (ms), ARGV[3] lease deadline (ms), ARGV[4] record TTL (ms).
     * Returns {'A', token, takeover 0|1} | {'M'} | {'P', remaining ms} | {'R', status, omitted, headers, body}.
     */
    static final RedisScript ACQUIRE = new RedisScript("acquire", """
        local r = redis.call('HMGET', KEYS[1], 'state', 'fp', 'deadline')
        local takeover = 0
        if r[1] then
          local now = tonumber(ARGV[2])
          local deadline = tonumber(r[3])
          if now < deadline then
            if r[2] ~= ARGV[1] then
              return {'M'}
            end
            if r[1] == 'C' then
              local c = redis.call('HMGET', KEYS[1], 'status', 'omitted', 'headers', 'body')
              return {'R', c[1], c[2], c[3], c[4]}
            end
            return {'P', deadline - now}
          end
          if r[1] == 'P' then
            takeover = 1
          end
        end
        redis.call('SET', KEYS[2], ARGV[2], 'NX')
        local token = redis.call('INCR', KEYS[2])
        redis.call('DEL', KEYS[1])
        redis.call('HSET', KEYS[1], 'state', 'P', 'fp', ARGV[1], 'token', token, 'deadline', ARGV[3])
        redis.call('PEXPIRE', KEYS[1], ARGV[4])
        if redis.call('PTTL', KEYS[2]) < tonumber(ARGV[4]) then
          redis.call('PEXPIRE', KEYS[2], ARGV[4])
        end
        return {'A', token, takeover}
        """, ScriptOutputType.MULTI);

    /*
     * KEYS[1] record, KEYS[2] token counter.
     * ARGV[1] token, ARGV[2] retention deadline (ms), ARGV[3] record TTL (ms),
     * ARGV[4] status, ARGV[5] omitted 0|1, ARGV[6] encoded headers, ARGV[7] body.
     */
    static final RedisScript COMPLETE = new RedisScript("complete", """
        local r = redis.call('HMGET', KEYS[1], 'state', 'token')
        if r[1] ~= 'P' or tonumber(r[2]) ~= tonumber(ARGV[1]) then
          return 0
        end
        redis.call('HSET', KEYS[1], 'state', 'C', 'deadline', ARGV[2], 'status', ARGV[4],
          'omitted', ARGV[5], 'headers', ARGV[6], 'body', ARGV[7])
        redis.call('PEXPIRE', KEYS[1], ARGV[3])
        if redis.call('PTTL', KEYS[2]) < tonumber(ARGV[3]) then
          redis.call('PEXPIRE', KEYS[2], ARGV[3])
        end
        return 1
        """, ScriptOutputType.INTEGER);

    /* KEYS[1] record, KEYS[2] token counter. ARGV[1] token, ARGV[2] lease deadline (ms), ARGV[3] record TTL (ms). */
    static final RedisScript RENEW = new RedisScript("renew", """
        local r = redis.call('HMGET', KEYS[1], 'state', 'token')
        if r[1] ~= 'P' or tonumber(r[2]) ~= tonumber(ARGV[1]) then
          return 0
        end
        redis.call('HSET', KEYS[1], 'deadline', ARGV[2])
        redis.call('PEXPIRE', KEYS[1], ARGV[3])
        if redis.call('PTTL', KEYS[2]) < tonumber(ARGV[3]) then
          redis.call('PEXPIRE', KEYS[2], ARGV[3])
        end
        return 1
        """, ScriptOutputType.INTEGER);

    /* KEYS[1] record. ARGV[1] token. The counter is left alone: it outlives the record. */
    static final RedisScript RELEASE = new RedisScript("release", """
        local r = redis.call('HMGET', KEYS[1], 'state', 'token')
        if r[1] ~= 'P' or tonumber(r[2]) ~= tonumber(ARGV[1]) then
          return 0
        end
        redis.call('DEL', KEYS[1])
        return 1
        """, ScriptOutputType.INTEGER);

    private static final byte[] ZERO = {'0'};
    private static final byte[] ONE = {'1'};

    private final AbstractRedisClient client;
    private final Clock clock;
    private final String keyPrefix;
    private final Duration commandTimeout;
    private final Duration lateCompletionWindow;
    private final Duration expiryGrace;

    private final Object lock = new Object();
    private volatile RedisScriptingCommands<byte[], byte[]> commands;
    private StatefulConnection<byte[], byte[]> connection; // guarded by lock
    private CompletableFuture<StatefulConnection<byte[], byte[]>> connecting; // guarded by lock
    private boolean closed; // guarded by lock

    /**
     * Creates the store; performs no I/O (the connection is opened on first use).
     *
     * @param client        a {@link RedisClient} or {@link RedisClusterClient}; not closed by
     *                      the store
     * @param clock         the time source for leases and retention
     * @param configuration key prefix, timeouts and TTL margins
     */
    public RedisIdempotencyStore(AbstractRedisClient client, Clock clock, RedisIdempotencyStoreConfiguration configuration) {
        this.client = Objects.requireNonNull(client, "client");
        if (!(client instanceof RedisClient) && !(client instanceof RedisClusterClient)) {
            throw new IllegalArgumentException("client must be a RedisClient or RedisClusterClient, was "
                + client.getClass().getName());
        }
        this.clock = Objects.requireNonNull(clock, "clock");
        Objects.requireNonNull(configuration, "configuration");
        this.keyPrefix = configuration.getKeyPrefix();
        this.commandTimeout = configuration.getCommandTimeout();
        this.lateCompletionWindow = configuration.getLateCompletionWindow();
        this.expiryGrace = configuration.getExpiryGrace();
    }

    @Override
    public AcquireResult acquire(String storeKey, byte[] fingerprint, Duration lease) {
        Objects.requireNonNull(storeKey, "storeKey");
        Objects.requireNonNull(fingerprint, "fingerprint");
        Checks.positive(lease, "lease");
        long now = clock.millis();
        long ttl = lease.plus(lateCompletionWindow).toMillis();
        List<Object> reply = run(ACQUIRE, keys(storeKey), fingerprint, decimal(now),
            decimal(now + lease.toMillis()), decimal(ttl));
        try {
            String kind = text(reply.get(0));
            switch (kind) {
                case "A":
                    return new AcquireResult.Acquired((Long) reply.get(1), ((Long) reply.get(2)) == 1L);
                case "M":
                    return new AcquireResult.Mismatch();
                case "P":
                    return new AcquireResult.InProgress(Duration.ofMillis((Long) reply.get(1)));
                case "R":
                    return new AcquireResult.Replay(decodeResponse(reply));
                default:
                    throw new IOException("unknown acquire reply " + kind);
            }
        } catch (IOException | RuntimeException e) {
            throw new IdempotencyStoreException("Redis idempotency record " + keyPrefix + "{" + storeKey
                + "} could not be decoded: " + e.getMessage(), e);
        }
    }

    @Override
    public boolean complete(String storeKey, long fencingToken, StoredResponse response, Duration retention) {
        Objects.requireNonNull(storeKey, "storeKey");
        Objects.requireNonNull(response, "response");
        Checks.positive(retention, "retention");
        long now = clock.millis();
        long ttl = retention.plus(expiryGrace).toMillis();
        Long done = run(COMPLETE, keys(storeKey), decimal(fencingToken), decimal(now + retention.toMillis()),
            decimal(ttl), decimal(response.status()), response.bodyOmitted() ? ONE : ZERO,
            ResponseEncoding.encodeHeaders(response.headers()), response.body());
        return done == 1L;
    }

    @Override
    public boolean release(String storeKey, long fencingToken) {
        Objects.requireNonNull(storeKey, "storeKey");
        Long done = run(RELEASE, new byte[][] {recordKey(storeKey)}, decimal(fencingToken));
        return done == 1L;
    }

    @Override
    public boolean renew(String storeKey, long fencingToken, Duration lease) {
        Objects.requireNonNull(storeKey, "storeKey");
        Checks.positive(lease, "lease");
        long now = clock.millis();
        long ttl = lease.plus(lateCompletionWindow).toMillis();
        Long done = run(RENEW, keys(storeKey), decimal(fencingToken), decimal(now + lease.toMillis()), decimal(ttl));
        return done == 1L;
    }

    /** Closes the store's own connection (not the client). */
    @Override
    public void close() {
        StatefulConnection<byte[], byte[]> c;
        synchronized (lock) {
            closed = true;
            commands = null;
            c = connection;
            connection = null;
        }
        if (c != null && c.isOpen()) {
            c.close();
        }
    }

    /** @return the Redis key of the record of {@code storeKey} */
    String recordKeyText(String storeKey) {
        return keyPrefix + "{" + storeKey + "}";
    }

    /** @return the Redis key of the fencing-token counter of {@code storeKey} */
    String tokenKeyText(String storeKey) {
        return recordKeyText(storeKey) + ":token";
    }

    private byte[] recordKey(String storeKey) {
        return recordKeyText(storeKey).getBytes(StandardCharsets.UTF_8);
    }

    private byte[][] keys(String storeKey) {
        return new byte[][] {recordKey(storeKey), tokenKeyText(storeKey).getBytes(StandardCharsets.UTF_8)};
    }

    private <T> T run(RedisScript script, byte[][] keys, byte[]... args) {
        RedisScriptingCommands<byte[], byte[]> c = commands();
        try {
            return script.execute(c, keys, args);
        } catch (RuntimeException e) {
            throw new IdempotencyStoreException("Redis idempotency store: " + script.name() + " failed: " + e, e);
        }
    }

    private RedisScriptingCommands<byte[], byte[]> commands() {
        RedisScriptingCommands<byte[], byte[]> c = commands;
        if (c != null) {
            return c;
        }
        CompletableFuture<StatefulConnection<byte[], byte[]>> attempt;
        synchronized (lock) {
            if (closed) {
                throw new IdempotencyStoreException("Redis idempotency store is closed");
            }
            if (commands != null) {
                return commands;
            }
            if (connecting == null) {
                connecting = connectInBackground();
            }
            attempt = connecting;
        }
        StatefulConnection<byte[], byte[]> conn;
        try {
            conn = attempt.get(commandTimeout.toMillis(), TimeUnit.MILLISECONDS);
        } catch (TimeoutException e) {
            throw new IdempotencyStoreException("Redis idempotency store: no connection within " + commandTimeout, e);
        } catch (ExecutionException e) {
            synchronized (lock) {
                if (connecting == attempt) {
                    connecting = null;
                }
            }
            throw new IdempotencyStoreException("Redis idempotency store: cannot connect: " + e.getCause(), e.getCause());
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new IdempotencyStoreException("interrupted while connecting to Redis", e);
        }
        synchronized (lock) {
            if (commands == null && !closed) {
                connection = conn;
                commands = syncCommands(conn);
            } else if (connection != conn) {
                conn.close();
            }
            if (commands == null) {
                throw new IdempotencyStoreException("Redis idempotency store is closed");
            }
            return commands;
        }
    }

    /** Connects on a daemon thread, so callers wait at most the command timeout and share one attempt. */
    private CompletableFuture<StatefulConnection<byte[], byte[]>> connectInBackground() {
        CompletableFuture<StatefulConnection<byte[], byte[]>> f = new CompletableFuture<>();
        Thread t = new Thread(() -> {
            try {
                StatefulConnection<byte[], byte[]> conn = client instanceof RedisClusterClient cluster
                    ? cluster.connect(ByteArrayCodec.INSTANCE)
                    : ((RedisClient) client).connect(ByteArrayCodec.INSTANCE);
                conn.setTimeout(commandTimeout);
                f.complete(conn);
            } catch (Throwable e) {
                LOG.debug("Redis idempotency store could not connect", e);
                f.completeExceptionally(e);
            }
        }, "idempotency-redis-connect");
        t.setDaemon(true);
        t.start();
        return f;
    }

    @SuppressWarnings("unchecked")
    private static RedisScriptingCommands<byte[], byte[]> syncCommands(StatefulConnection<byte[], byte[]> conn) {
        if (conn instanceof StatefulRedisClusterConnection<?, ?> cluster) {
            return ((StatefulRedisClusterConnection<byte[], byte[]>) cluster).sync();
        }
        return ((StatefulRedisConnection<byte[], byte[]>) conn).sync();
    }

    private static StoredResponse decodeResponse(List<Object> reply) throws IOException {
        if (reply.size() != 5 || reply.get(1) == null || reply.get(2) == null || reply.get(3) == null
            || reply.get(4) == null) {
            throw new IOException("incomplete completed record");
        }
        int status = Integer.parseInt(text(reply.get(1)));
        boolean omitted = "1".equals(text(reply.get(2)));
        Map<String, List<String>> headers = ResponseEncoding.decodeHeaders((byte[]) reply.get(3));
        return new StoredResponse(status, headers, (byte[]) reply.get(4), omitted);
    }

    private static String text(Object bulk) {
        return new String((byte[]) bulk, StandardCharsets.US_ASCII);
    }

    private static byte[] decimal(long value) {
        return Long.toString(value).getBytes(StandardCharsets.US_ASCII);
    }

}
