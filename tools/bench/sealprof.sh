#!/bin/bash
# sealprof.sh BIN NAME: one server, the harness's write, then a 12 s CPU
# profile of what the server does after it (the seal), in $OUT/sd-NAME/seal.prof;
# EXTRA adds tsdb dev flags.
set -u
BIN=$1 NAME=$2 D=${OUT:-/tmp/tsdb-bench}/sd-$2; rm -rf "$D"; mkdir -p "$D"
LG=${LG:-$HOME/.cache/tsdb-peers/bin/loadgen}
"$BIN" dev --servers 1 --port 18085 --etcd-port 23795 --data "$D/data" --pprof-addr 127.0.0.1:6065 ${EXTRA:-} >"$D/log" 2>&1 &
PID=$!
sleep 2
END=$(($(date +%s) / 60 * 60 - 60))
"$LG" -url http://127.0.0.1:18085 -api tsdb -mode write -end $END -pid $PID -label "$NAME" 2>&1 | grep "points/s ("
curl -s http://127.0.0.1:18085/metrics | grep -E "^tsdb_seal_rows_total"
curl -s -o "$D/seal.prof" "http://127.0.0.1:6065/debug/pprof/profile?seconds=12"
curl -s http://127.0.0.1:18085/metrics | grep -E "^tsdb_seal_(rows|block_bytes|head_bytes)_total"
kill $PID; wait $PID 2>/dev/null
echo "go tool pprof -top -cum $BIN $D/seal.prof"
