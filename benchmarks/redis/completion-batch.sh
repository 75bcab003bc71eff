#!/bin/bash
# Redis's CPU per completion when the completion script takes 1, 2 or 4 keys per call, at pipeline
# depths 1, 4 and 16 (benchmarks/README.md, "The completion, several keys per script call, again").
# Needs redis-server on this machine at port ${PORT:-6379} (its CPU is read from /proc),
# redis-cli, redis-benchmark and bc. Uses database 15 of that server and empties it before and
# after, also when it fails.
# The script is the store's completion (RedisIdempotencyStore.COMPLETE) except that it writes the
# record back in progress, so that every call does the full check and write however often
# redis-benchmark's random keys repeat.
set -euo pipefail
PORT=${PORT:-6379}
R="redis-cli -p $PORT -n 15"
PID=$($R info server | tr -d '\r' | sed -n 's/^process_id://p')
if [ -z "$PID" ] || [ ! -r "/proc/$PID/stat" ]; then
  echo "no redis-server of this machine answers at port $PORT" >&2
  exit 1
fi
trap '$R flushdb >/dev/null' EXIT
REST=$(head -c 150 /dev/zero | tr '\0' 'x')
$R flushdb >/dev/null
$R eval "for i=0,299999 do redis.call('SET', string.format('bm:{%012d}', i), '1PTTTTTTTTDDDDDDDD\0\032' .. string.rep('f', 32), 'PX', 3600000) end return 1" 0 >/dev/null
S1=$($R script load "local v = redis.call('GET', KEYS[1]) if not v or string.sub(v, 2, 2) ~= 'P' or string.sub(v, 3, 10) ~= ARGV[1] then return 0 end local fp = string.sub(v, 19, 20 + string.byte(v, 19) * 256 + string.byte(v, 20)) redis.call('SET', KEYS[1], string.sub(v, 1, 1) .. 'P' .. ARGV[1] .. ARGV[2] .. fp .. ARGV[3], 'PX', ARGV[4]) return 1")
SN=$($R script load "local r = {} for k = 1, #KEYS do local a = (k - 1) * 4 local v = redis.call('GET', KEYS[k]) if not v or string.sub(v, 2, 2) ~= 'P' or string.sub(v, 3, 10) ~= ARGV[a + 1] then r[k] = 0 else local fp = string.sub(v, 19, 20 + string.byte(v, 19) * 256 + string.byte(v, 20)) redis.call('SET', KEYS[k], string.sub(v, 1, 1) .. 'P' .. ARGV[a + 1] .. ARGV[a + 2] .. fp .. ARGV[a + 3], 'PX', ARGV[a + 4]) r[k] = 1 end end return r")
TCK=$(getconf CLK_TCK)
cpu() { awk '{print $14 + $15}' /proc/$PID/stat; }
one() { # keys per call, pipeline depth, calls
  local k=$1 p=$2 n=$3 args=() keys=() sha=$S1
  for ((i = 0; i < k; i++)); do keys+=("bm:{__rand_int__}"); args+=(TTTTTTTT DDDDDDDD "$REST" 3600000); done
  [ "$k" -gt 1 ] && sha=$SN
  $R config resetstat >/dev/null
  local c0 c1 stat us calls
  c0=$(cpu)
  redis-benchmark -p "$PORT" --dbnum 15 -q -c 32 -P "$p" -n "$n" -r 300000 evalsha "$sha" "$k" "${keys[@]}" "${args[@]}" >/dev/null
  c1=$(cpu)
  stat=$($R info commandstats | tr -d '\r' | grep '^cmdstat_evalsha:')
  if ! echo "$stat" | grep -q 'failed_calls=0'; then
    echo "the script failed: $stat" >&2
    exit 1
  fi
  calls=$(echo "$stat" | sed 's/^cmdstat_evalsha:calls=\([0-9]*\),.*/\1/')
  us=$(echo "$stat" | sed 's/.*,usec=\([0-9]*\),.*/\1/')
  echo "keys per call $k, depth $p: script $(echo "scale=2; $us / ($calls * $k)" | bc) µs per key," \
    "Redis CPU $(echo "scale=2; ($c1 - $c0) * 1000000 / $TCK / ($calls * $k)" | bc) µs per key"
}
for pass in 1 2; do
  for p in 1 4 16; do
    for k in 1 2 4; do one "$k" "$p" $((400000 / k)); done
  done
done
