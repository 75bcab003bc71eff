import re, sys, datetime
# gc-pauses.py <gc log> <saturated-tail.sh output>: the collector's pauses inside each wrk run (issue 72)
log, runs = sys.argv[1], sys.argv[2]
pauses = []
for line in open(log):
    m = re.match(r'\[(\S+)\].*Pause.*?(\d+\.\d+)ms', line)
    if m:
        t = datetime.datetime.strptime(m.group(1)[:23], '%Y-%m-%dT%H:%M:%S.%f').replace(tzinfo=datetime.timezone.utc).timestamp()
        # the log's time carries its offset
        off = m.group(1)[23:]
        if off and off not in ('+0000', 'Z'):
            sign = 1 if off[0] == '+' else -1
            t -= sign * (int(off[1:3]) * 3600 + int(off[3:5]) * 60)
        pauses.append((t, float(m.group(2)), line.strip()))
for line in open(runs):
    m = re.search(r'\(window (\S+)-(\S+)\)', line)
    if not m: continue
    a, b = float(m.group(1)), float(m.group(2))
    inside = [p for p in pauses if a <= p[0] <= b]
    total = sum(p[1] for p in inside)
    mx = max([p[1] for p in inside] or [0])
    print('%s | pauses %d, total %.0f ms, max %.1f ms' % (line.split(' (window')[0], len(inside), total, mx))
