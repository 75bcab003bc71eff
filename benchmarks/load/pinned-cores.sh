#!/bin/bash
# The in-memory new-key routes with the service and wrk on separate cores (benchmarks/README.md,
# "The load generator on a core of its own"). The load benchmark runs wrk and the service on the
# same two cores, as the issue's target is stated; this asks what the filter costs when wrk does not
# compete with the service: the service on CPU ${SERVICE_CPUS:-0}, wrk on CPU ${WRK_CPUS:-1}.
# Drives /echo (no filter), /idem/echo (the filter), /floor/echo and /work-floor/echo (see
# EchoController) with new keys, `wrk -t2 -c32`, each warmed up for 30 s, then ROUNDS rounds of
# SECONDS s each in rotated order; prints each run (req/s, service CPU per request in µs, non-2xx)
# and, per route, the median of the rounds' ratios to /echo and of its CPU over /echo's.
# Usage, from the repository root, after
#   mvn -B -q -pl benchmarks/load -am package -DskipTests:
#   benchmarks/load/pinned-cores.sh [rounds=10] [seconds=5]      (about 5 minutes)
# The service's JVM sees one CPU, so it runs the serial collector unless SERVICE_JVM_OPTS says
# otherwise (the load benchmark's service sees two and runs G1): SERVICE_JVM_OPTS adds JVM flags
# (e.g. -XX:+UseG1GC), SERVICE_PROPS the service's properties (e.g.
# idempotency.store.memory.max-entries=2000).
# Needs wrk, taskset, GNU awk (asort) and at least two CPUs.
set -euo pipefail
ROUNDS=${1:-10}
SECONDS_PER_RUN=${2:-5}
JAR=${JAR:-benchmarks/load/target/load-benchmark.jar}
[ -r "$JAR" ] || { echo "no $JAR: build it first (see the usage above)" >&2; exit 1; }
command -v wrk >/dev/null || { echo "wrk is not on the PATH (apt-get install -y wrk)" >&2; exit 1; }
TCK=$(getconf CLK_TCK)
DIR=$(mktemp -d)
PID=
trap '[ -z "$PID" ] || { kill $PID 2>/dev/null; wait $PID 2>/dev/null || true; }; rm -rf "$DIR"' EXIT
SCRIPT=$DIR/new-keys.lua
java -cp "$JAR" dev.idempotency.benchmarks.load.Wrk > "$SCRIPT" # the load benchmark's new-key script
mkfifo "$DIR/in" "$DIR/out"
# the service answers on stdin (LoadApp ends when it closes): hold it open until the end
# shellcheck disable=SC2086 # the two lists split into words on purpose
taskset -c "${SERVICE_CPUS:-0}" java -Xms1g -Xmx1g ${SERVICE_JVM_OPTS:-} -cp "$JAR" dev.idempotency.benchmarks.load.LoadApp \
  idempotency.store.redis.enabled=false ${SERVICE_PROPS:-} < "$DIR/in" > "$DIR/out" 2>"$DIR/service.log" &
PID=$!
exec 3> "$DIR/in" 4< "$DIR/out"
PORT=
while read -r line <&4; do
  if [[ "$line" == READY* ]]; then PORT=${line#READY }; break; fi
done
[ -n "$PORT" ] || { echo "the service did not start:" >&2; cat "$DIR/service.log" >&2; exit 1; }
echo "service (pid $PID, port $PORT) on CPU ${SERVICE_CPUS:-0}, wrk on CPU ${WRK_CPUS:-1}"
cpu() { awk '{print $14 + $15}' "/proc/$PID/stat"; }
run() { # route seconds key-prefix
  local t0 t1 out
  t0=$(cpu)
  out=$(taskset -c "${WRK_CPUS:-1}" wrk -t2 -c32 -d"$2"s -s "$SCRIPT" "http://127.0.0.1:$PORT$1" -- "$3")
  t1=$(cpu)
  awk -v route="$1" -v t0="$t0" -v t1="$t1" -v tck="$TCK" '
    /Requests\/sec/ { rps = $2 } / requests in / { n = $1 } /Non-2xx/ { bad = $5 }
    END { printf "%s %s %.1f %d\n", route, rps, (t1 - t0) * 1e6 / tck / n, bad }' <<< "$out"
}
ROUTES=(/echo /idem/echo /floor/echo /work-floor/echo)
RUN_ID=$RANDOM$RANDOM
for r in "${ROUTES[@]}"; do
  for i in 1 2 3 4 5 6; do run "$r" 5 "w$RUN_ID-$i" >/dev/null; done
done
for ((k = 0; k < ROUNDS; k++)); do
  for ((j = 0; j < ${#ROUTES[@]}; j++)); do
    echo "round $k $(run "${ROUTES[$(((j + k) % ${#ROUTES[@]}))]}" "$SECONDS_PER_RUN" "r$RUN_ID-$k")"
  done
done | tee "$DIR/rounds"
awk '
  { rps[$2, $3] = $4; cpu[$2, $3] = $5; rounds[$2] = 1; if ($6 > 0) bad += $6 }
  function median(a, n) { asort(a); return n % 2 ? a[(n + 1) / 2] : (a[n / 2] + a[n / 2 + 1]) / 2 }
  END {
    n = 0; for (k in rounds) { n++; e[n] = cpu[k, "/echo"] }
    printf "/echo: %.1f µs of service CPU per request (median of %d rounds)\n", median(e, n), n
    split("/idem/echo /floor/echo /work-floor/echo", routes, " ")
    for (i = 1; i <= 3; i++) {
      m = 0; delete a; delete c
      for (k in rounds) { m++; a[m] = rps[k, routes[i]] / rps[k, "/echo"]; c[m] = cpu[k, routes[i]] - cpu[k, "/echo"] }
      printf "%s: ratio to /echo %.2f, CPU per request %+.1f µs over /echo (medians of the rounds)\n", routes[i], median(a, m), median(c, m)
    }
    if (bad > 0) { printf "%d responses were not 2xx: the figures are not valid\n", bad; exit 1 }
  }' "$DIR/rounds"
