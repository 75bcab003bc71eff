package dev.idempotency.store.redis;

import io.lettuce.core.ScriptOutputType;

/** The store's Lua scripts, each one atomic on one record (and its steps, in the same slot). */
final class RedisScripts {

    private RedisScripts() {
    }

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
}
