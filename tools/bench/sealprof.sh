#!/bin/bash
# sealprof.sh BIN NAME: one server, the harness's write, then a 12 s CPU
# profile of what the server does after it (the seal), in $OUT/sd-NAME/seal.prof;
# EXTRA adds tsdb dev flags, LGFLAGS loadgen flags (e.g. -points 10000000 -series 100000).
set -u
. "$(dirname "$0")/lib.sh"
BIN=$1 NAME=$2 D=${OUT:-/tmp/tsdb-bench}/sd-$2
start_server "$BIN" "$D" ${EXTRA:-}
write_harness "$NAME" ${LGFLAGS:-} | grep "points/s ("
curl -s $BASE/metrics | grep -E "^tsdb_seal_rows_total"
curl -s -o "$D/seal.prof" "http://127.0.0.1:6065/debug/pprof/profile?seconds=12"
curl -s $BASE/metrics | grep -E "^tsdb_seal_(rows|block_bytes|head_bytes)_total"
stop_server
echo "go tool pprof -top -cum $BIN $D/seal.prof"
