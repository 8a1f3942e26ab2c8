#!/bin/bash
# storemat.sh ROUNDS TAG BASE_BIN NEW_BIN [loadgen flags...]: VictoriaMetrics, two
# tsdb builds (base, new) and InfluxDB as the peer harness's peers, in that order
# each round, with the tsdb store's size after each tsdb run (its pebble
# directory and its whole server directory, after shutdown). Logs in
# $OUT/TAG/PEER-rROUND.log (OUT default /tmp/tsdb-bench); msum.py reads them.
# PEERS (default "vm base new influx") picks and orders the runs of a round.
set -u
rounds=$1 tag=$2 base=$3 new=$4
shift 4
PEERS_DIR=${PEERS_DIR:-$(cd "$(dirname "$0")/../../../shared/peers" && pwd)}
SCRATCH=${SCRATCH:-$HOME/.cache/tsdb-peers}
res=${OUT:-/tmp/tsdb-bench}/$tag
mkdir -p "$res"
for r in $(seq 1 "$rounds"); do
	for p in ${PEERS:-vm base new influx}; do
		echo "== $tag round $r $p $(date +%T)"
		case $p in
		vm | influx) "$PEERS_DIR/run.sh" $p -c 4 "$@" >"$res/$p-r$r.log" 2>&1 ;;
		base) TSDB=$base "$PEERS_DIR/run.sh" tsdb -c 4 "$@" >"$res/$p-r$r.log" 2>&1 ;;
		new) TSDB=$new "$PEERS_DIR/run.sh" tsdb -c 4 "$@" >"$res/$p-r$r.log" 2>&1 ;;
		esac
		echo "rc=$?"
		if [ "$p" = base ] || [ "$p" = new ]; then
			echo "store: $(du -sb "$SCRATCH/tsdb/s1/pebble" | cut -f1) bytes; s1 $(du -sb "$SCRATCH/tsdb/s1" | cut -f1) bytes" | tee -a "$res/$p-r$r.log"
		fi
	done
done
echo "$res"
