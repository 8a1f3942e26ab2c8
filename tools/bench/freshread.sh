#!/bin/bash
# freshread.sh ROUNDS BIN: tsdb (BIN) and VictoriaMetrics in turn, each fresh:
# the harness's write and read phase from one loadgen process, as run.sh runs
# it, then the read phase from two new loadgen processes against the same data;
# series_select p50s. CLIENT_GOGC sets GOGC for the writing loadgen alone (the
# servers keep their own). LGFLAGS adds loadgen flags.
set -u
. "$(dirname "$0")/lib.sh"
sel() { grep -E 'RESULT.*query=series_select' | grep -o 'p50_ms=[0-9.]*' | cut -d= -f2; }
D=${OUT:-/tmp/tsdb-bench}/freshread
for r in $(seq 1 "$1"); do
	for peer in tsdb vm; do
		if [ $peer = tsdb ]; then
			start_server "$2" "$D/tsdb"
			U=$BASE API=tsdb
		else
			rm -rf "$D/vm" && mkdir -p "$D/vm"
			"$VM" -httpListenAddr=127.0.0.1:8428 -storageDataPath="$D/vm" -loggerLevel=WARN >"$D/vm/log" 2>&1 &
			PID=$!
			sleep 2
			END=$(($(date +%s) / 60 * 60 - 60)) U=$VMBASE API=prom
		fi
		a=$(GOGC=${CLIENT_GOGC:-100} "$LG" -url $U -api $API -mode write,read -end $END -pid $PID -c 4 ${LGFLAGS:-} 2>&1 | sel)
		b=$("$LG" -url $U -api $API -mode read -end $END -pid $PID ${LGFLAGS:-} 2>&1 | sel)
		c=$("$LG" -url $U -api $API -mode read -end $END -pid $PID ${LGFLAGS:-} 2>&1 | sel)
		echo "r$r $peer series_select p50 ms: the writing client $a, new clients $b $c"
		stop_server
	done
done
