#!/bin/bash
# rest.sh BIN NAME: one server, the harness's write, WAIT s (default 10), the
# harness's read phase three times, then (with PROF=1) one client repeating
# series_select (or agg_mean_1m with LOOP=agg) for 5.5 s under a CPU profile
# ($OUT/rest-NAME/sel.prof, or agg.prof).
# LGFLAGS adds loadgen flags (e.g. -points 10000000), EXTRA tsdb dev flags.
set -u
. "$(dirname "$0")/lib.sh"
BIN=$1 NAME=$2 D=${OUT:-/tmp/tsdb-bench}/rest-$2
start_server "$BIN" "$D" ${EXTRA:-}
write_harness "$NAME" ${LGFLAGS:-} | grep "points/s ("
sleep "${WAIT:-10}"
for i in 1 2 3; do
	"$LG" -url $BASE -api tsdb -mode read -end $END -pid $PID ${LGFLAGS:-} 2>&1 | grep -E "read: (series|agg)" | sed 's/|.*20 reps://'
done
if [ -n "${PROF:-}" ]; then
	LOOP=${LOOP:-select} PROFNAME=sel
	[ "$LOOP" = agg ] && PROFNAME=agg
	curl -s -o "$D/$PROFNAME.prof" "http://127.0.0.1:6065/debug/pprof/profile?seconds=6" &
	CURL=$!
	START=$(((END - 660) * 1000000000)) ENDN=$((END * 1000000000))
	python3 - "$BASE" $START $ENDN "$LOOP" <<'PY'
import sys, time, urllib.parse, urllib.request
base, start, end, loop = sys.argv[1:5]
q = base + "/api/v1/tables/bench/query?from=%s&to=%s&fields=usage_user&" % (start, end)
if loop == "agg":
    q += "agg=avg&group=none&step=1m"
else:
    q += "limit=1000000&series=" + urllib.parse.quote("cpu,host=host042,region=r2")
t0, ls = time.time(), []
while time.time() - t0 < 5.5:
    a = time.time(); urllib.request.urlopen(q).read(); ls.append((time.time() - a) * 1000)
ls.sort(); print("%s loop n=%d p50=%.2f ms" % (loop, len(ls), ls[len(ls) // 2]))
PY
	wait $CURL
fi
stop_server
