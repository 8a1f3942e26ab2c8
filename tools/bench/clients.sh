#!/bin/bash
# clients.sh BIN NAME: one server, the harness's write, WAIT s (default 20), then
# the harness's series_select from four clients in turn, 3 s each: qs GETting back
# to back, qs decoding each answer as the harness does, qs pausing 10 ms between
# GETs, and a fresh loadgen's read phase. Prints each one's p50 and the server's
# CPU per query (qs: from /proc, over its GETs), and the answer's bytes.
# LGFLAGS adds loadgen flags (e.g. -points 10000000), EXTRA tsdb dev flags.
set -u
. "$(dirname "$0")/lib.sh"
BIN=$1 NAME=$2 D=${OUT:-/tmp/tsdb-bench}/clients-$2
QS=${OUT:-/tmp/tsdb-bench}/qs
(cd "$(dirname "$0")/.." && go build -o "$QS" ./bench/qs) || exit 1
start_server "$BIN" "$D" ${EXTRA:-}
write_harness "$NAME" ${LGFLAGS:-} | grep "points/s ("
sleep "${WAIT:-20}"
URL="$BASE/api/v1/tables/bench/query?from=$(((END - 600) * 1000000000))&to=$((END * 1000000000))&fields=usage_user&limit=1000000&series=cpu%2Chost%3Dhost042%2Cregion%3Dr2"
for mode in back-to-back decode pause; do
	qs_cpu "$NAME" $mode "$URL"
done
echo "$NAME answer: $(curl -s "$URL" | wc -c) bytes"
echo "$NAME loadgen read: $("$LG" -url $BASE -api tsdb -mode read -end $END -pid $PID ${LGFLAGS:-} 2>&1 | grep -E 'read: series_select' | grep -oE 'p50 [0-9.]+ms')"
stop_server
