#!/bin/bash
# queryprof.sh BIN: one server, the harness's write (LGFLAGS, default 10 M points of
# 100,000 series), WAIT s of rest (default 15), then qs GETting one query back to back
# for 9 s with an 8 s CPU profile of the server beside it, in $OUT/queryprof/QUERY.prof.
# QUERY is count (the harness's series_count, default) or select (its series_select).
set -u
. "$(dirname "$0")/lib.sh"
QS=${OUT:-/tmp/tsdb-bench}/qs
(cd "$(dirname "$0")/.." && go build -o "$QS" ./bench/qs) || exit 1
LGF=${LGFLAGS:--points 10000000 -series 100000}
D=${OUT:-/tmp/tsdb-bench}/queryprof
Q=${QUERY:-count}
start_server "$1" "$D"
write_harness queryprof $LGF | grep "points/s ("
sleep "${WAIT:-15}"
URL=$(series_query_url "$Q")
curl -s -o "$D/$Q.prof" "http://127.0.0.1:6065/debug/pprof/profile?seconds=8" &
prof=$!
c0=$(server_ticks)
out=$("$QS" -url "$URL" -seconds 9)
c1=$(server_ticks)
wait $prof
n=$(echo "$out" | grep -oE 'n=[0-9]+' | cut -d= -f2 | paste -sd+ | bc)
echo "server CPU $(((c1 - c0) * 10000000 / n / 1000)) µs a query over $n"
stop_server
echo "go tool pprof -top -cum $1 $D/$Q.prof"
