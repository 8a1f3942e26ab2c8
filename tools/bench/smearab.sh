#!/bin/bash
# smearab.sh BASE_BIN NEW_BIN ROUND... : the smear load test of two tsdb builds,
# alternated (odd rounds base first, even rounds new first), each run
#   BIN loadtest --cluster 3 --rf 3 --compare --presplit-horizon 45s
# with its report in $OUT/lt-{base,new}-ROUND.json (data directories removed);
# $EXTRA adds loadtest flags (EXTRA="--warmup 60s": the steady state).
# Summarize with smearsum.py. Run it alone on the machine.
set -u
base=$1 new=$2
shift 2
OUT=${OUT:-/tmp/tsdb-bench/smear}
mkdir -p "$OUT"
for r in "$@"; do
	if [ $((r % 2)) -eq 1 ]; then order="base new"; else order="new base"; fi
	for b in $order; do
		if [ "$b" = base ]; then bin=$base; else bin=$new; fi
		d=$OUT/lt-$b-$r
		rm -rf "$d"
		echo "== round $r $b $(date +%T)"
		# shellcheck disable=SC2086 # EXTRA is a list of flags
		timeout 900 "$bin" loadtest --cluster 3 --rf 3 --compare --presplit-horizon 45s ${EXTRA:-} \
			--chart "" --dir "$d" --keep --report "$d.json" >"$d.out" 2>"$d.err"
		echo "rc=$? $(date +%T)"
		rm -rf "$d"
	done
done
