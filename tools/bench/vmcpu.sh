#!/bin/bash
# vmcpu.sh: clients.sh's measure for VictoriaMetrics: the harness's write
# (LGFLAGS adds loadgen flags, e.g. -points 10000000), WAIT s (default 20),
# then the harness's series_select GETted by qs for 3 s back to back and 3 s
# with the harness's decode between GETs: each one's p50 and the server's CPU
# per query (from /proc, over its GETs), and the answer's bytes.
set -u
. "$(dirname "$0")/lib.sh"
D=${OUT:-/tmp/tsdb-bench}/vmcpu
QS=${OUT:-/tmp/tsdb-bench}/qs
(cd "$(dirname "$0")/.." && go build -o "$QS" ./bench/qs) || exit 1
start_vm "$D" ${LGFLAGS:-}
sleep "${WAIT:-20}"
URL=$(vm_select_url)
for mode in back-to-back decode; do
	qs_cpu vm $mode "$URL"
done
echo "vm answer: $(curl -s "$URL" | wc -c) bytes"
stop_server
