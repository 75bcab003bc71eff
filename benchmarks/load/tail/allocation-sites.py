import collections, json, subprocess, sys
# allocation-sites.py <jfr> <requests> [rows]: the heap a request allocates, from JFR's TLAB events
# (see allocation-sites.sh), by the nearest dev.idempotency frame and by allocation site
jfr, requests = sys.argv[1], int(sys.argv[2])
rows = int(sys.argv[3]) if len(sys.argv) > 3 else 25
text = subprocess.run(['jfr', 'print', '--json', '--events',
                       'jdk.ObjectAllocationInNewTLAB,jdk.ObjectAllocationOutsideTLAB', jfr],
                      check=True, capture_output=True, text=True).stdout
events = json.loads(text)['recording']['events']


def weight(e):
    v = e['values']
    return v.get('tlabSize') or v.get('allocationSize')  # a new TLAB stands for all of it


def frames(e):
    st = e['values'].get('stackTrace')
    return [f['method']['type']['name'].replace('/', '.') + '.' + f['method']['name'] for f in st['frames']] if st else []


total = 0
ours = collections.Counter()
sites = collections.Counter()
for e in events:
    w = weight(e)
    total += w
    fr = frames(e)
    # a lambda's own frame names no source; the frame below it does
    nearest = next((f for f in fr if f.startswith('dev.idempotency.') and '$$Lambda' not in f), None)
    ours[nearest or '(no dev.idempotency frame: Micronaut, Netty, the handler)'] += w
    sites[(fr[0] if fr else '?') + ('  <- ' + nearest if nearest else '')] += w
print('%d TLAB events, %.1f KB per request' % (len(events), total / requests / 1024))
mine = sum(v for k, v in ours.items() if k.startswith('dev.idempotency.'))
print('with a dev.idempotency frame on the stack: %.1f KB per request' % (mine / requests / 1024))
print('\nbytes per request by nearest dev.idempotency frame')
for k, v in ours.most_common(rows):
    print('%7.0f  %s' % (v / requests, k))
print('\nbytes per request by allocation site')
for k, v in sites.most_common(rows):
    print('%7.0f  %s' % (v / requests, k))
