#!/bin/bash
# aftercpu.sh BIN: one tsdb server, the harness's write (LGFLAGS adds loadgen
# flags), then the server's CPU in each 100 ms for SECS s (default 8) after
# the write's end, in hundredths of a CPU-second (20 is both cores busy), ten
# to a line, and its seal counters: when the seals after a write run against
# the harness's 5 s settle.
set -u
. "$(dirname "$0")/lib.sh"
start_server "$1" "${OUT:-/tmp/tsdb-bench}/aftercpu"
write_harness aftercpu -c 4 ${LGFLAGS:-} | grep "points/s ("
prev=$(server_ticks)
for i in $(seq 1 $((${SECS:-8} * 10))); do
	sleep 0.1
	c=$(server_ticks)
	printf "%d " $((c - prev))
	prev=$c
	[ $((i % 10)) = 0 ] && echo " <- $((i / 10)) s"
done
curl -s $BASE/metrics | grep -E "^tsdb_seal_(rows|blocks)_total"
stop_server
