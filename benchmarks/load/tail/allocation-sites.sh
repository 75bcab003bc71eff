#!/bin/bash
# Where a request's heap allocation comes from (issue 72), exactly enough to decide what to cut:
#   benchmarks/load/tail/allocation-sites.sh [path] [seconds]     path: idem/echo (default) or echo
# Starts LoadApp (in-memory store, -Xms1g -Xmx1g), warms the route up for 20 s at wrk -t2 -c32 (a
# new key per request), then records JFR's TLAB events (every new TLAB and every allocation outside
# one, with 256 frames of stack) for [seconds] (default 15) of the same load, and prints:
#   python3 benchmarks/load/tail/allocation-sites.py <jfr> <requests>
# bytes per request in all, then by the nearest dev.idempotency frame on the allocating stack and
# by allocation site. A TLAB event stands for the whole TLAB it opens, so the figures are unbiased
# over many events, unlike jdk.ObjectAllocationSample, whose few samples of huge weight decide its
# totals. Needs wrk and a built benchmarks/load/target/load-benchmark.jar (see benchmarks/README.md).
set -e
path=${1:-idem/echo}
seconds=${2:-15}
cd "$(dirname "$0")/../../.."
. benchmarks/load/tail/service.sh
mkdir -p $out
label=alloc-${path//\//_}
jdk=$(dirname "$(dirname "$(readlink -f "$(command -v java)")")")
# the JDK's profile settings with both TLAB events on
python3 - "$jdk/lib/jfr/profile.jfc" $out/tlab.jfc <<'EOF'
import re, sys
s = open(sys.argv[1]).read()
for name in ('jdk.ObjectAllocationInNewTLAB', 'jdk.ObjectAllocationOutsideTLAB'):
    i = s.index('<event name="%s">' % name)
    j = s.index('</event>', i)
    s = s[:i] + re.sub(r'<setting name="enabled"[^>]*>false</setting>', '<setting name="enabled">true</setting>', s[i:j]) + s[j:]
open(sys.argv[2], 'w').write(s)
EOF
start_service $label -XX:FlightRecorderOptions:stackdepth=256
wrk -t2 -c32 -d20s -s $script $B/$path -- warm-$label >/dev/null
jcmd $APP JFR.start name=tlab settings=$(pwd)/$out/tlab.jfc filename=$(pwd)/$out/$label.jfr >/dev/null
requests=$(wrk -t2 -c32 -d${seconds}s -s $script $B/$path -- $label | grep "requests in" | awk '{print $1}')
jcmd $APP JFR.stop name=tlab >/dev/null
stop_service
echo "$path: $requests requests while recording (JFR slows the service; the bytes per request are what count)"
python3 benchmarks/load/tail/allocation-sites.py $out/$label.jfr $requests
