#!/bin/bash
# freshread.sh ROUNDS BIN: tsdb (BIN) and VictoriaMetrics in turn, each fresh:
# the harness's write and read phase from one loadgen process, as run.sh runs
# it, then the read phase from two new loadgen processes against the same data;
# series_select and series_count p50s. CLIENT_GOGC sets GOGC for the writing
# loadgen alone (the servers keep their own). LGFLAGS adds loadgen flags.
set -u
. "$(dirname "$0")/lib.sh"
# p50 QUERY: the p50 of one query in loadgen's output.
p50() { grep -E "RESULT.*query=$1 " | grep -o 'p50_ms=[0-9.]*' | cut -d= -f2; }
D=${OUT:-/tmp/tsdb-bench}/freshread
for r in $(seq 1 "$1"); do
	for peer in tsdb vm; do
		if [ $peer = tsdb ]; then
			start_server "$2" "$D/tsdb"
			U=$BASE API=tsdb
		else
			launch_vm "$D/vm"
			U=$VMBASE API=prom
		fi
		GOGC=${CLIENT_GOGC:-100} "$LG" -url $U -api $API -mode write,read -end $END -pid $PID -c 4 ${LGFLAGS:-} >"$D/$peer.r$r.a" 2>&1
		"$LG" -url $U -api $API -mode read -end $END -pid $PID ${LGFLAGS:-} >"$D/$peer.r$r.b" 2>&1
		"$LG" -url $U -api $API -mode read -end $END -pid $PID ${LGFLAGS:-} >"$D/$peer.r$r.c" 2>&1
		for q in series_select series_count; do
			echo "r$r $peer $q p50 ms: the writing client $(p50 $q <"$D/$peer.r$r.a"), new clients $(p50 $q <"$D/$peer.r$r.b") $(p50 $q <"$D/$peer.r$r.c")"
		done
		stop_server
	done
done
