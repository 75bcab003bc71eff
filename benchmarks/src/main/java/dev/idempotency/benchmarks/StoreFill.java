package dev.idempotency.benchmarks;

import dev.idempotency.testsupport.TestPostgres;
import dev.idempotency.testsupport.TestRedis;
import io.lettuce.core.ScriptOutputType;
import io.lettuce.core.api.StatefulRedisConnection;

import javax.sql.DataSource;
import java.sql.Connection;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.util.HashMap;
import java.util.Map;

/**
 * Fills a store with completed records, for the growth measurements ({@link StoreBenchmark},
 * {@link GrowthRun}): copies of one completed record (the replay record) under other keys of the
 * real keys' length, made inside the server: a Lua loop in Redis, one {@code INSERT ... SELECT}
 * per million rows in PostgreSQL. Keys are numbered, so a fill can be extended from where it ended.
 */
final class StoreFill {

    /** The length of a store key (a SHA-256 in hex). */
    static final int KEY_LENGTH = 64;

    private StoreFill() {
    }

    /**
     * @return a context's settings for {@code store} (memory, redis, postgres) on the test servers, without
     *     an HTTP server: Redis under {@code redisPrefix}, PostgreSQL in {@code schema} with its purge off
     *     (a fill expires in hours, and must stay put while it is measured)
     */
    static Map<String, Object> settings(String store, String redisPrefix, String schema) {
        Map<String, Object> props = new HashMap<>();
        props.put("micronaut.server.port", "-1");
        switch (store) {
            case "memory" -> props.put("idempotency.store.redis.enabled", "false");
            case "redis" -> {
                props.put("redis.uri", TestRedis.uri());
                props.put("idempotency.store.redis.key-prefix", redisPrefix);
            }
            case "postgres" -> {
                props.putAll(TestPostgres.properties(TestPostgres.server(), schema));
                props.put("datasources.default.maximum-pool-size", "20");
                props.put("idempotency.store.redis.enabled", "false");
                props.put("idempotency.store.postgres.purge-enabled", "false");
            }
            default -> throw new IllegalArgumentException("unknown store " + store + " (memory, redis, postgres)");
        }
        return props;
    }

    /** Copies {@code prefix{replayKey}} to keys {@code from..to} under {@code prefix}, each expiring in {@code ttlMillis}. */
    static void redis(StatefulRedisConnection<String, String> redis, String prefix, String replayKey, long from, long to,
                      long ttlMillis) {
        String script = "local v = redis.call('GET', KEYS[1])\n"
            + "for i = tonumber(ARGV[2]), tonumber(ARGV[3]) do\n"
            + "  redis.call('SET', ARGV[1] .. '{' .. string.format('%0" + KEY_LENGTH + "d', i) .. '}', v, 'PX', ARGV[4])\n"
            + "end\n"
            + "return 1\n";
        long chunk = 50_000;
        for (long start = from; start <= to; start += chunk) {
            long end = Math.min(to, start + chunk - 1);
            redis.sync().eval(script, ScriptOutputType.INTEGER, new String[] {prefix + "{" + replayKey + "}"}, prefix,
                Long.toString(start), Long.toString(end), Long.toString(ttlMillis));
        }
    }

    /** @return Redis's {@code used_memory} */
    static long redisMemory(StatefulRedisConnection<String, String> redis) {
        for (String line : redis.sync().info("memory").split("\r?\n")) {
            if (line.startsWith("used_memory:")) {
                return Long.parseLong(line.substring("used_memory:".length()).trim());
            }
        }
        throw new IllegalStateException("INFO memory has no used_memory");
    }

    /** Copies the replay row of {@code schema}'s records table to keys {@code from..to}, then VACUUM ANALYZE. */
    static void postgres(String schema, String replayKey, long from, long to, long ttlMillis) {
        String table = schema + ".idempotency_records";
        long chunk = 1_000_000;
        for (long start = from; start <= to; start += chunk) {
            long end = Math.min(to, start + chunk - 1);
            // sorted keys: the index is filled at its right edge (denser than after random inserts;
            // a lookup walks the same depth)
            TestPostgres.execute("INSERT INTO " + table + " (store_key, fingerprint, fencing_token, holder, completed,"
                + " acquired_at, expires_at, response_status, response_headers, response_body, body_omitted)"
                + " SELECT decode(lpad(g::text, " + KEY_LENGTH + ", '0'), 'hex'), fingerprint, fencing_token, holder,"
                + " completed, acquired_at, now() + interval '" + ttlMillis + " milliseconds', response_status,"
                + " response_headers, response_body, body_omitted FROM " + table + " r, generate_series(" + start
                + ", " + end + ") g WHERE r.store_key = decode('" + replayKey + "', 'hex')");
        }
        TestPostgres.execute("VACUUM ANALYZE " + table);
    }

    /** @return {@code pg_total_relation_size} of {@code schema}'s records table */
    static long postgresBytes(DataSource ds, String schema) {
        try (Connection c = ds.getConnection(); Statement st = c.createStatement();
             ResultSet rs = st.executeQuery("SELECT pg_total_relation_size('" + schema + ".idempotency_records')")) {
            rs.next();
            return rs.getLong(1);
        } catch (SQLException e) {
            throw new IllegalStateException(e);
        }
    }
}
