# rotsum.py DIR [BASE]: the results of `NOVM=1 mat.sh`: each build's medians, and each
# build ÷ BASE (default "base") in the same round, per round and the median.
import glob, os, re, statistics as st, sys

d = sys.argv[1]
base = sys.argv[2] if len(sys.argv) > 2 else 'base'
keys = ['ingest', 'cpu', 'agg', 'select', 'count', 'store']
rows = {}
for f in glob.glob(d + '/*-r*.log'):
    name, r = os.path.basename(f)[:-4].rsplit('-r', 1)
    t = open(f).read()

    def g(pat):
        m = re.search(pat, t)
        return float(m.group(1)) if m else None

    rows.setdefault(name, {})[int(r)] = dict(
        ingest=g(r'write: (\d+) points/s'), cpu=g(r'server CPU ([\d.]+)s \('),
        agg=g(r'agg_mean_1m .*?p50 ([\d.]+)ms'), select=g(r'series_select .*?p50 ([\d.]+)ms'),
        count=g(r'series_count .*?p50 ([\d.]+)ms'), store=g(r'store: (\d+) bytes'))
for name in sorted(rows):
    med = {k: st.median(v) for k in keys if (v := [c[k] for c in rows[name].values() if c[k]])}
    print(name, ' '.join('%s=%g' % kv for kv in med.items()))
for name in sorted(rows):
    if name == base or base not in rows:
        continue
    print('%s ÷ %s, same round:' % (name, base))
    for k in keys:
        x = [c[k] / rows[base][r][k] for r, c in sorted(rows[name].items())
             if r in rows[base] and c[k] and rows[base][r][k]]
        if x:
            print('  %-7s %s  median %.2f' % (k, ', '.join('%.2f' % v for v in x), st.median(x)))
