#!/bin/bash
# abw.sh ROUNDS NAME=BIN...: the harness's write phase only, builds alternated:
# points/s, server CPU-s per 1 M points, RSS after the write (as the harness
# reads it), and the pebble directory SETTLE s (default 8) after the write.
# LGFLAGS adds loadgen flags.
set -u
. "$(dirname "$0")/lib.sh"
ROUNDS=$1; shift
for r in $(seq 1 "$ROUNDS"); do
	for spec in "$@"; do
		name=${spec%%=*} bin=${spec#*=}
		D=${OUT:-/tmp/tsdb-bench}/abw-$name
		start_server "$bin" "$D"
		out=$(write_harness "$name" ${LGFLAGS:-})
		pts=$(echo "$out" | grep -oE "^write: [0-9]+ points/s" | grep -oE "[0-9]+")
		cpu=$(echo "$out" | grep -oE "[0-9.]+s per 1M" | grep -oE "^[0-9.]+")
		rss=$(echo "$out" | grep -oE "server RSS [0-9]+ MB" | grep -oE "[0-9]+")
		sleep "${SETTLE:-8}"
		stop_server
		echo "r$r $name points/s=$pts cpu_s_per_1M=$cpu rss_mb=$rss pebble_dir=$(du -sk "$D/data/s1/pebble" | cut -f1)K"
	done
done
