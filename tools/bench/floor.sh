#!/bin/bash
# floor.sh ROUNDS BIN: what a one-series count costs beside an empty answer.
# Each round, VictoriaMetrics then tsdb (BIN), each fresh: the harness's write
# (LGFLAGS adds loadgen flags), WAIT s of rest (default 20), then qs GETting
# for 3 s each, back to back: the server's health endpoint (an answer of a few
# bytes, no data read) and the harness's series_count. Prints each one's p50
# and the server's CPU per query (qs_cpu): the health check is the floor of
# an HTTP exchange on this machine, with this client.
set -u
. "$(dirname "$0")/lib.sh"
QS=${OUT:-/tmp/tsdb-bench}/qs
(cd "$(dirname "$0")/.." && go build -o "$QS" ./bench/qs) || exit 1
D=${OUT:-/tmp/tsdb-bench}/floor
for r in $(seq "$1"); do
	echo "== round $r"
	start_vm "$D/vm" ${LGFLAGS:-}
	sleep "${WAIT:-20}"
	t=$(python3 -c "print('%.3f' % ($END - 0.001))")
	qs_cpu "vm health" back-to-back "$VMBASE/health"
	qs_cpu "vm series_count" back-to-back "$VMBASE/api/v1/query?nocache=1&time=$t&query=count_over_time%28cpu_usage_user%7Bhost%3D%22host042%22%7D%5B600s%5D%29"
	stop_server
	start_server "$2" "$D/tsdb"
	write_harness floor ${LGFLAGS:-} | grep "points/s ("
	sleep "${WAIT:-20}"
	qs_cpu "tsdb healthz" back-to-back "$BASE/healthz"
	qs_cpu "tsdb series_count" back-to-back "$(series_query_url count)"
	stop_server
done
