#!/bin/bash
# gdump.sh DIR : while a local load test cluster runs in DIR (tsdb loadtest
# --cluster 3 --dir DIR --keep --server-flag=--pprof-addr=127.0.0.1:0), save
# every ~5 s each server's goroutine dump (debug=1) in DIR.g/sN.UNIX.txt and
# its /metrics in DIR.m.sN.UNIX. Stop it with kill once the load test ends.
# Summarize a dump with gsum.py.
d=$1
mkdir -p "$d.g"
while true; do
	for s in 1 2 3; do
		p=$(grep -oE 'profiler listening" addr=http://[0-9.:]+' "$d/s$s.log" 2>/dev/null | head -1 | sed 's/.*addr=//')
		url=$(grep -oE 'listening on http://[0-9.:]+' "$d/s$s.log" 2>/dev/null | head -1 | awk '{print $3}')
		[ -z "$p" ] && continue
		ts=$(date +%s)
		curl -s -m 3 "$p/debug/pprof/goroutine?debug=1" >"$d.g/s$s.$ts.txt" 2>/dev/null &
		curl -s -m 2 "$url/metrics" >"$d.m.s$s.$ts" 2>/dev/null &
	done
	wait
	sleep 4
done
