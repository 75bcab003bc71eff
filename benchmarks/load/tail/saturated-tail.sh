#!/bin/bash
# The in-memory tail at saturation (issue 72), with the collector's log beside it:
#   benchmarks/load/tail/saturated-tail.sh <label> [JVM flags...]     e.g. g1, or zgc -XX:+UseZGC
# Starts LoadApp (in-memory store, 1,000,000 records, -Xms1g -Xmx1g) with a GC log, warms both
# routes up for 20 s each, then three rounds of 10 s at wrk -t2 -c32 of the route without the
# filter and with it (a new key per request). Then:
#   python3 benchmarks/load/tail/gc-pauses.py target/tail/gc-<label>.log target/tail/<label>.out
# prints each run's p99 beside the collector's pauses inside it. Needs wrk and a built
# benchmarks/load/target/load-benchmark.jar (see benchmarks/README.md).
set -e
label=$1; shift
cd "$(dirname "$0")/../../.."
. benchmarks/load/tail/service.sh
mkdir -p $out
rm -f $out/gc-$label.log $out/$label.out
start_service $label "$@" -Xlog:gc:file=$out/gc-$label.log:time
wrk -t2 -c32 -d20s -s $script $B/idem/echo -- warm1 >/dev/null
wrk -t2 -c32 -d20s -s $script $B/echo -- warm2 >/dev/null
for r in 1 2 3; do
  for path in echo idem/echo; do
    t0=$(date +%s.%N)
    report=$(wrk -t2 -c32 -d10s --latency -s $script $B/$path -- r$r-$label-${path//\//_})
    t1=$(date +%s.%N)
    rps=$(echo "$report" | grep Requests/sec | awk '{print $2}')
    p50=$(echo "$report" | grep -E "^\s+50%" | awk '{print $2}')
    p99=$(echo "$report" | grep -E "^\s+99%" | awk '{print $2}')
    echo "$label round $r /$path: $rps req/s p50 $p50 p99 $p99 (window $t0-$t1)" | tee -a $out/$label.out
  done
done
stop_service
