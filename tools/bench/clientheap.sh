#!/bin/bash
# clientheap.sh ROUNDS BIN: tsdb (BIN) and VictoriaMetrics in turn, each fresh:
# the harness's write (2 M points; LGFLAGS adds loadgen flags), WAIT s of rest
# (default 10), then the harness's series_select GETted by qs with the
# harness's decode between GETs for SECS s (default 3), first as a new process
# would (its memory reused), then with HEAP MB (default 1500) of garbage left
# in its heap as the harness's client leaves its write phase's bodies: each
# second's p50, and the minor page faults per GET and per decode.
set -u
. "$(dirname "$0")/lib.sh"
ROUNDS=$1 BIN=$2 D=${OUT:-/tmp/tsdb-bench}/clientheap
QS=${QS:-$D/qs}
mkdir -p "$D"
(cd "$(dirname "$0")/.." && go build -o "$QS" ./bench/qs) || exit 1
loop() {
	"$QS" -url "$1" -decode -seconds "${SECS:-3}" "${@:2}" | sed 's/^/  /'
}
for r in $(seq 1 "$ROUNDS"); do
	for peer in tsdb vm; do
		if [ $peer = tsdb ]; then
			start_server "$BIN" "$D/tsdb"
			write_harness tsdb -c 4 ${LGFLAGS:-} | grep -o "^write: [0-9]* points/s"
			START=$(((END - 660) * 1000000000)) ENDN=$((END * 1000000000))
			U="$BASE/api/v1/tables/bench/query?from=$START&to=$ENDN&fields=usage_user&limit=1000000&series=cpu%2Chost%3Dhost042%2Cregion%3Dr2"
		else
			start_vm "$D/vm" ${LGFLAGS:-}
			U=$(vm_select_url)
		fi
		sleep "${WAIT:-10}"
		echo "r$r $peer: a new client"
		loop "$U"
		echo "r$r $peer: ${HEAP:-1500} MB of garbage left in the client's heap"
		loop "$U" -heap "${HEAP:-1500}"
		stop_server
	done
done
