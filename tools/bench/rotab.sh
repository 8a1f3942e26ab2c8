#!/bin/bash
# rotab.sh ROUNDS TAG NAME=BIN... [-- loadgen flags]: the peer harness's tsdb run
# (`TSDB=BIN run.sh tsdb -c 4`) of each build, the order rotated each round, with
# the store's size (the pebble directory after shutdown) appended to each log.
# Logs in $OUT/TAG/NAME-rROUND.log (OUT default /tmp/tsdb-bench); rotsum.py reads
# them. Unlike mat.sh no VictoriaMetrics run: builds against each other only.
set -u
rounds=$1 tag=$2
shift 2
specs=()
while [ $# -gt 0 ] && [ "$1" != -- ]; do
	specs+=("$1")
	shift
done
[ $# -gt 0 ] && shift
PEERS_DIR=${PEERS_DIR:-$(cd "$(dirname "$0")/../../../shared/peers" && pwd)}
SCRATCH=${SCRATCH:-$HOME/.cache/tsdb-peers}
res=${OUT:-/tmp/tsdb-bench}/$tag
mkdir -p "$res"
n=${#specs[@]}
for r in $(seq 1 "$rounds"); do
	for i in $(seq 0 $((n - 1))); do
		spec=${specs[$(((i + r) % n))]}
		name=${spec%%=*} bin=${spec#*=}
		echo "== $tag round $r $name $(date +%T)"
		TSDB=$bin "$PEERS_DIR/run.sh" tsdb -c 4 "$@" >"$res/$name-r$r.log" 2>&1
		echo "store: $(du -sb "$SCRATCH/tsdb/s1/pebble" | cut -f1) bytes" >>"$res/$name-r$r.log"
	done
done
echo "$res"
