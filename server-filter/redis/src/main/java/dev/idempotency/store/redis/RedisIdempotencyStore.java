package dev.idempotency.store.redis;

import dev.idempotency.server.Checks;
import dev.idempotency.server.store.AcquireResult;
import dev.idempotency.server.store.IdempotencyStore;
import dev.idempotency.server.store.IdempotencyStoreException;
import dev.idempotency.server.store.StoredResponse;
import io.lettuce.core.AbstractRedisClient;
import io.lettuce.core.RedisClient;
import io.lettuce.core.RedisURI;
import io.lettuce.core.ScriptOutputType;
import io.lettuce.core.api.StatefulConnection;
import io.lettuce.core.api.async.RedisScriptingAsyncCommands;
import io.lettuce.core.cluster.RedisClusterClient;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.time.Clock;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.TimeUnit;

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
 * <h2>Connection, threads and failures</h2>
 * The store talks to Redis through Lettuce's asynchronous API on a connection of its own, with a
 * byte-array codec, opened on first use (not in the constructor) with {@code connectAsync}: no
 * call ever blocks a thread, and every stage completes on Lettuce's I/O thread. The connection
 * belongs to a Lettuce client the store makes on the application client's resources and
 * options (see {@link RedisConnector}); the application's client itself is never changed.
 * {@code command-timeout} bounds each call, the connect included, by one periodic check instead
 * of a timer per command ({@link CommandDeadlines}). Any Lettuce failure (connection refused or
 * lost, timeout, error reply) and any record that cannot be decoded fails the stage with an
 * {@link IdempotencyStoreException}. While the connection is down, calls fail at once; a failed
 * connect is tried again on the next call, and an established connection reconnects by itself
 * (Lettuce's reconnect backoff).
 *
 * <p>Thread-safe: Lettuce connections are, and every operation is a single atomic script.
 */
public final class RedisIdempotencyStore implements IdempotencyStore, AutoCloseable {

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
    private static final long MAX_TICK_NANOS = TimeUnit.MILLISECONDS.toNanos(50);

    private final Clock clock;
    private final String keyPrefix;
    private final Duration lateCompletionWindow;
    private final Duration expiryGrace;
    private final CommandDeadlines deadlines;
    private final RedisConnector connector;

    /**
     * Creates the store; performs no I/O (the connection is opened on first use).
     *
     * @param client        the application's {@link RedisClient} or {@link RedisClusterClient}, whose
     *                      resources and options the store's own connection shares; not changed or
     *                      closed by the store
     * @param uris          the Redis server (one URI for a standalone client) or the cluster's seed
     *                      nodes
     * @param clock         the time source for leases and retention
     * @param configuration key prefix, timeouts and TTL margins
     */
    public RedisIdempotencyStore(AbstractRedisClient client, List<RedisURI> uris, Clock clock,
                                 RedisIdempotencyStoreConfiguration configuration) {
        Objects.requireNonNull(client, "client");
        Objects.requireNonNull(uris, "uris");
        this.clock = Objects.requireNonNull(clock, "clock");
        Objects.requireNonNull(configuration, "configuration");
        this.keyPrefix = configuration.getKeyPrefix();
        this.lateCompletionWindow = configuration.getLateCompletionWindow();
        this.expiryGrace = configuration.getExpiryGrace();
        this.deadlines = new CommandDeadlines(configuration.getCommandTimeout());
        long tick = Math.max(TimeUnit.MILLISECONDS.toNanos(1),
            Math.min(MAX_TICK_NANOS, configuration.getCommandTimeout().toNanos() / 10));
        this.connector = new RedisConnector(client, uris, deadlines, tick);
    }

    @Override
    public CompletionStage<AcquireResult> acquire(String storeKey, byte[] fingerprint, Duration lease) {
        Objects.requireNonNull(storeKey, "storeKey");
        Objects.requireNonNull(fingerprint, "fingerprint");
        Checks.positive(lease, "lease");
        long now = clock.millis();
        long ttl = lease.plus(lateCompletionWindow).toMillis();
        return run(ACQUIRE, keys(storeKey), reply -> decodeAcquire(storeKey, reply), fingerprint, decimal(now),
            decimal(now + lease.toMillis()), decimal(ttl));
    }

    @Override
    public CompletionStage<Boolean> complete(String storeKey, long fencingToken, StoredResponse response,
                                             Duration retention) {
        Objects.requireNonNull(storeKey, "storeKey");
        Objects.requireNonNull(response, "response");
        Checks.positive(retention, "retention");
        long now = clock.millis();
        long ttl = retention.plus(expiryGrace).toMillis();
        return run(COMPLETE, keys(storeKey), RedisIdempotencyStore::isOne, decimal(fencingToken),
            decimal(now + retention.toMillis()), decimal(ttl), decimal(response.status()),
            response.bodyOmitted() ? ONE : ZERO, ResponseEncoding.encodeHeaders(response.headers()), response.body());
    }

    @Override
    public CompletionStage<Boolean> release(String storeKey, long fencingToken) {
        Objects.requireNonNull(storeKey, "storeKey");
        return run(RELEASE, new byte[][] {recordKey(storeKey)}, RedisIdempotencyStore::isOne, decimal(fencingToken));
    }

    @Override
    public CompletionStage<Boolean> renew(String storeKey, long fencingToken, Duration lease) {
        Objects.requireNonNull(storeKey, "storeKey");
        Checks.positive(lease, "lease");
        long now = clock.millis();
        long ttl = lease.plus(lateCompletionWindow).toMillis();
        return run(RENEW, keys(storeKey), RedisIdempotencyStore::isOne, decimal(fencingToken),
            decimal(now + lease.toMillis()), decimal(ttl));
    }

    /** Closes the store's own connection and client (not the application's client). */
    @Override
    public void close() {
        connector.close();
    }

    /** @return the store's open connection, if any (for tests) */
    StatefulConnection<byte[], byte[]> connection() {
        return connector.connection();
    }

    /** @return how many calls the timeout check tracks (for tests) */
    int trackedCalls() {
        return deadlines.size();
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

    /** A decoder of a script's reply; may throw {@link IOException} for a record it cannot read. */
    @FunctionalInterface
    private interface Decoder<T> {
        T decode(Object reply) throws IOException;
    }

    /**
     * Runs {@code script} and decodes its reply; the stage fails with an
     * {@link IdempotencyStoreException} on any failure, and when no answer came within the
     * command timeout.
     */
    private <T> CompletableFuture<T> run(RedisScript script, byte[][] keys, Decoder<T> decoder, byte[]... args) {
        CompletableFuture<T> result = new CompletableFuture<>();
        deadlines.track(result);
        CompletableFuture<RedisScriptingAsyncCommands<byte[], byte[]>> commands = connector.commands();
        if (commands.isDone() && !commands.isCompletedExceptionally()) {
            RedisScriptingAsyncCommands<byte[], byte[]> c = commands.join();
            connector.dispatch(() -> send(script, c, keys, args, decoder, result));
        } else {
            commands.whenComplete((c, failure) -> {
                if (failure != null) {
                    result.completeExceptionally(new IdempotencyStoreException(
                        "Redis idempotency store: cannot connect: " + cause(failure), cause(failure)));
                } else {
                    connector.dispatch(() -> send(script, c, keys, args, decoder, result));
                }
            });
        }
        return result;
    }

    private <T> void send(RedisScript script, RedisScriptingAsyncCommands<byte[], byte[]> commands, byte[][] keys,
                          byte[][] args, Decoder<T> decoder, CompletableFuture<T> result) {
        CompletableFuture<Object> reply;
        try {
            reply = script.execute(commands, keys, args);
        } catch (RuntimeException e) {
            reply = CompletableFuture.failedFuture(e);
        }
        reply.whenComplete((value, failure) -> {
            if (failure != null) {
                Throwable cause = cause(failure);
                result.completeExceptionally(new IdempotencyStoreException("Redis idempotency store: " + script.name()
                    + " failed: " + cause, cause));
                return;
            }
            try {
                result.complete(decoder.decode(value));
            } catch (IOException | RuntimeException e) {
                result.completeExceptionally(new IdempotencyStoreException("Redis idempotency store: the reply of "
                    + script.name() + " could not be decoded: " + e.getMessage(), e));
            }
        });
    }

    @SuppressWarnings("unchecked")
    private AcquireResult decodeAcquire(String storeKey, Object value) throws IOException {
        List<Object> reply = (List<Object>) value;
        String kind = text(reply.get(0));
        try {
            return switch (kind) {
                case "A" -> new AcquireResult.Acquired((Long) reply.get(1), ((Long) reply.get(2)) == 1L);
                case "M" -> new AcquireResult.Mismatch();
                case "P" -> new AcquireResult.InProgress(Duration.ofMillis((Long) reply.get(1)));
                case "R" -> new AcquireResult.Replay(decodeResponse(reply));
                default -> throw new IOException("unknown acquire reply " + kind);
            };
        } catch (IOException | RuntimeException e) {
            throw new IOException("record " + keyPrefix + "{" + storeKey + "}: " + e.getMessage(), e);
        }
    }

    private static boolean isOne(Object reply) {
        return Long.valueOf(1L).equals(reply);
    }

    private static Throwable cause(Throwable failure) {
        return failure instanceof CompletionException && failure.getCause() != null ? failure.getCause() : failure;
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
