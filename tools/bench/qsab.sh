#!/bin/bash
# qsab.sh ROUNDS NAME=BIN...: builds alternated (the order as given, every round),
# each on a fresh server: the harness's write (LGFLAGS, default 10 M points of
# 100,000 series), WAIT s of rest (default 15), then qs GETting one query back to
# back for SECS s (default 6): each second's p50 in order and the server's CPU per
# query; then the harness's read phase once (its series_count and series_select
# p50s). QUERY is count (the harness's series_count, default) or select (its
# series_select).
set -u
. "$(dirname "$0")/lib.sh"
ROUNDS=$1; shift
QS=${OUT:-/tmp/tsdb-bench}/qs
(cd "$(dirname "$0")/.." && go build -o "$QS" ./bench/qs) || exit 1
LGF=${LGFLAGS:--points 10000000 -series 100000}
for r in $(seq 1 "$ROUNDS"); do
	for nb in "$@"; do
		NAME=${nb%%=*} BIN=${nb#*=} D=${OUT:-/tmp/tsdb-bench}/qsab-$NAME
		start_server "$BIN" "$D"
		write_harness "$NAME" $LGF >/dev/null
		sleep "${WAIT:-15}"
		URL=$(series_query_url "${QUERY:-count}")
		c0=$(server_ticks)
		out=$("$QS" -url "$URL" -seconds "${SECS:-6}")
		c1=$(server_ticks)
		n=$(echo "$out" | grep -oE 'n=[0-9]+' | cut -d= -f2 | paste -sd+ | bc)
		p50s=$(echo "$out" | grep -oE 'p50=[0-9.]+' | cut -d= -f2 | paste -sd' ')
		rd=$("$LG" -url $BASE -api tsdb -mode read -end $END -pid $PID $LGF 2>&1 | grep -E 'read: series_(count|select)' | grep -oE 'p50 [0-9.]+ms' | paste -sd' ')
		echo "r$r $NAME: qs p50 ms $p50s | server CPU $(((c1 - c0) * 10000000 / n / 1000)) µs a query over $n | harness series_count, series_select: $rd"
		stop_server
	done
done
