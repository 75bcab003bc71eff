# Sourced by the scripts here: the in-memory echo service (LoadApp, -Xms1g -Xmx1g, 1,000,000
# records at most) and the load benchmark's own wrk script, from the repository root.
#   start_service <label> [JVM flags...]   sets $out, $script, $APP and $B (the service's base URL)
#   stop_service
out=benchmarks/load/target/tail
script=$out/new-keys.lua

start_service() {
  local label=$1; shift
  mkdir -p $out
  java -cp benchmarks/load/target/load-benchmark.jar dev.idempotency.benchmarks.load.Wrk > $script
  exec 3< <(sleep 600)  # the service runs until its standard input closes
  java -Xms1g -Xmx1g "$@" -cp benchmarks/load/target/load-benchmark.jar dev.idempotency.benchmarks.load.LoadApp \
    idempotency.store.redis.enabled=false idempotency.store.memory.max-entries=1000000 \
    <&3 > $out/app-$label.out 2>$out/app-$label.err &
  APP=$!
  for _ in $(seq 1 60); do grep -q READY $out/app-$label.out 2>/dev/null && break; sleep 0.5; done
  B=http://127.0.0.1:$(grep READY $out/app-$label.out | awk '{print $2}')
}

stop_service() {
  kill $APP
  pkill -f "sleep 600" || true
}
