#!/bin/bash
# aggtl.sh BIN NAME: one server, the harness's write, then agg_mean_1m's
# query repeated by one client for 12 s: p50 per half second, beside the rows
# sealed so far. EXTRA adds tsdb dev flags.
set -u
BIN=$1 NAME=$2 D=${OUT:-/tmp/tsdb-bench}/at-$2; rm -rf "$D"; mkdir -p "$D"
LG=${LG:-$HOME/.cache/tsdb-peers/bin/loadgen}
"$BIN" dev --servers 1 --port 18085 --etcd-port 23795 --data "$D/data" ${EXTRA:-} >"$D/log" 2>&1 &
PID=$!
sleep 2
END=$(($(date +%s) / 60 * 60 - 60))
"$LG" -url http://127.0.0.1:18085 -api tsdb -mode write -end $END -pid $PID -label "$NAME" 2>&1 | grep "points/s ("
START=$(((END - 600) * 1000000000)) ENDN=$((END * 1000000000))
python3 - "http://127.0.0.1:18085/api/v1/tables/bench/query?from=$START&to=$ENDN&agg=avg&fields=usage_user&group=none&step=1m" "http://127.0.0.1:18085/metrics" <<'PY'
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
kill $PID; wait $PID 2>/dev/null
