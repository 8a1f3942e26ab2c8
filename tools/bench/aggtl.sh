#!/bin/bash
# aggtl.sh BIN NAME: one server, the harness's write, then agg_mean_1m's
# query repeated by one client for 12 s: p50 per half second, beside the rows
# sealed so far. EXTRA adds tsdb dev flags.
set -u
. "$(dirname "$0")/lib.sh"
BIN=$1 NAME=$2 D=${OUT:-/tmp/tsdb-bench}/at-$2
start_server "$BIN" "$D" ${EXTRA:-}
write_harness "$NAME" | grep "points/s ("
START=$(((END - 600) * 1000000000)) ENDN=$((END * 1000000000))
python3 - "$BASE/api/v1/tables/bench/query?from=$START&to=$ENDN&agg=avg&fields=usage_user&group=none&step=1m" "$BASE/metrics" <<'PY'
import re, sys, time, urllib.request
query, metrics = sys.argv[1], sys.argv[2]
def sealed():
    m = re.search(r'^tsdb_seal_rows_total (\S+)', urllib.request.urlopen(metrics).read().decode(), re.M)
    return float(m.group(1)) if m else 0
t0, buckets, last = time.time(), {}, -1
while time.time() - t0 < 12:
    a = time.time(); urllib.request.urlopen(query).read()
    k = int((a - t0) * 2) / 2
    buckets.setdefault(k, []).append((time.time() - a) * 1000)
    if k != last:
        last = k
        if k - 0.5 in buckets:
            ls = sorted(buckets[k - 0.5])
            print("t=%4.1f n=%3d p50=%6.1f ms min=%6.1f sealed=%d" % (k - 0.5, len(ls), ls[len(ls) // 2], ls[0], sealed()))
PY
stop_server
