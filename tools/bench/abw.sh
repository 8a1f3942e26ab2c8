#!/bin/bash
# abw.sh ROUNDS NAME=BIN...: the harness's write phase only, builds alternated:
# points/s, server CPU-s per 1 M points, and the pebble directory SETTLE s
# (default 8) after the write. LGFLAGS adds loadgen flags.
set -u
ROUNDS=$1; shift
LG=${LG:-$HOME/.cache/tsdb-peers/bin/loadgen}
for r in $(seq 1 "$ROUNDS"); do
	for spec in "$@"; do
		name=${spec%%=*} bin=${spec#*=}
		D=${OUT:-/tmp/tsdb-bench}/abw-$name; rm -rf "$D"; mkdir -p "$D"
		"$bin" dev --servers 1 --port 18085 --etcd-port 23795 --data "$D/data" >"$D/log" 2>&1 &
		PID=$!
		sleep 2
		END=$(($(date +%s) / 60 * 60 - 60))
		out=$("$LG" -url http://127.0.0.1:18085 -api tsdb -mode write -end $END -pid $PID -label "$name" ${LGFLAGS:-} 2>&1)
		pts=$(echo "$out" | grep -oE "^write: [0-9]+ points/s" | grep -oE "[0-9]+")
		cpu=$(echo "$out" | grep -oE "[0-9.]+s per 1M" | grep -oE "^[0-9.]+")
		sleep "${SETTLE:-8}"
		kill $PID; wait $PID 2>/dev/null
		echo "r$r $name points/s=$pts cpu_s_per_1M=$cpu pebble_dir=$(du -sk "$D/data/s1/pebble" | cut -f1)K"
	done
done
