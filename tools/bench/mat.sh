#!/bin/bash
# mat.sh ROUNDS NAME=BIN...: VictoriaMetrics, then each tsdb build as the peer
# harness's tsdb peer, interleaved, the order rotated each round. FLAGS adds
# loadgen flags (default "-c 4"); NOVM=1 leaves VictoriaMetrics out (builds
# against each other, rotsum.py). Each tsdb log ends with its store's size (the
# pebble directory after shutdown). Logs in $OUT/res-<time>/NAME-rROUND.log.
set -u
ROUNDS=$1; shift
PEERS_DIR=${PEERS_DIR:-$(cd "$(dirname "$0")/../../../shared/peers" && pwd)}
SCRATCH=${SCRATCH:-$HOME/.cache/tsdb-peers}
RES=${OUT:-/tmp/tsdb-bench}/res-$(date +%H%M%S); mkdir -p "$RES"
if [ "${NOVM:-}" = 1 ]; then specs=("$@"); else specs=("vm=" "$@"); fi
for r in $(seq 1 "$ROUNDS"); do
	n=${#specs[@]}
	for i in $(seq 0 $((n - 1))); do
		spec=${specs[$(((i + r - 1) % n))]}
		name=${spec%%=*} bin=${spec#*=}
		if [ "$name" = vm ]; then
			"$PEERS_DIR/run.sh" vm ${FLAGS:--c 4} >"$RES/$name-r$r.log" 2>&1
		else
			TSDB=$bin "$PEERS_DIR/run.sh" tsdb ${FLAGS:--c 4} >"$RES/$name-r$r.log" 2>&1
			echo "store: $(du -sb "$SCRATCH/tsdb/s1/pebble" | cut -f1) bytes" >>"$RES/$name-r$r.log"
		fi
		echo "r$r $name $(grep -E '^write: [0-9]+ points' "$RES/$name-r$r.log" | head -1)"
	done
done
echo "$RES"
