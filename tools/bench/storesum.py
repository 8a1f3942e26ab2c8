# storesum.py DIR: storemat.sh's results per round; each figure ÷ VictoriaMetrics'
# and new ÷ base in the same round, with medians; the tsdb store's bytes per point
# (its pebble directory after shutdown ÷ the points written), VictoriaMetrics' data
# directory's.
import glob, os, re, statistics as st, sys

d = sys.argv[1]
rows = {}
for f in sorted(glob.glob(d + '/*-r*.log')):
    peer, r = os.path.basename(f)[:-4].rsplit('-r', 1)
    t = open(f).read()

    def g(pat):
        m = re.search(pat, t)
        return float(m.group(1)) if m else None

    points = g(r'points=(\d+)')
    c = dict(ingest=g(r'write: (\d+) points/s'), cpu=g(r'([\d.]+)s per 1M points'),
             rss=g(r'peak (\d+) MB'), agg=g(r'agg_mean_1m .*?p50 ([\d.]+)ms'),
             select=g(r'series_select .*?p50 ([\d.]+)ms'), count=g(r'series_count .*?p50 ([\d.]+)ms'))
    store, vmdata = g(r'store: (\d+) bytes'), g(r'data=([\d.]+)M')
    if points and store:
        c['bytes/pt'] = store / points
    if points and vmdata:
        c['bytes/pt'] = vmdata * 2**20 / points
    rows.setdefault(peer, {})[int(r)] = c
keys = ['ingest', 'cpu', 'rss', 'agg', 'select', 'count', 'bytes/pt']
for p in sorted(rows, key=lambda p: ['vm', 'base', 'new', 'influx'].index(p) if p in ('vm', 'base', 'new', 'influx') else 9):
    print(p)
    for r in sorted(rows[p]):
        print('  r%d ' % r + '  '.join('%s=%s' % (k, rows[p][r].get(k) if not isinstance(rows[p][r].get(k), float) else round(rows[p][r][k], 3)) for k in keys))


def ratios(a, b, k):
    return [rows[a][r][k] / rows[b][r][k] for r in rows.get(a, {}) if r in rows.get(b, {}) and rows[a][r].get(k) and rows[b][r].get(k)]


for a, b in [('base', 'vm'), ('new', 'vm'), ('influx', 'vm'), ('new', 'base')]:
    if a not in rows or b not in rows:
        continue
    print('%s ÷ %s, same round:' % (a, b))
    for k in keys:
        x = ratios(a, b, k)
        if x:
            print('  %-8s %s  median %.2f' % (k, ', '.join('%.2f' % v for v in x), st.median(x)))
