#!/bin/bash
# restreps.sh NAME=BIN...: for each spec in turn (NAME "vm" with an empty BIN
# runs VictoriaMetrics), a fresh server, the harness's write, WAIT s
# (default 10), then the harness's read phase at rest with REPS timed
# repetitions per query (default 300): the p50 of series_select and
# agg_mean_1m. Repeat a spec to alternate builds.
set -u
. "$(dirname "$0")/lib.sh"
for spec in "$@"; do
	name=${spec%%=*} bin=${spec#*=}
	if [ "$name" = vm ]; then
		start_vm "${OUT:-/tmp/tsdb-bench}/restreps-vm" >/dev/null
		sleep "${WAIT:-10}"
		"$LG" -url $VMBASE -api prom -mode read -end $END -pid $PID -reps "${REPS:-300}" 2>&1 |
			grep -E "read: (series_select|agg)" | sed "s/^/$name /; s/|.*reps://"
		stop_server
	else
		start_server "$bin" "${OUT:-/tmp/tsdb-bench}/restreps-$name"
		write_harness "$name" -c 4 >/dev/null
		sleep "${WAIT:-10}"
		"$LG" -url $BASE -api tsdb -mode read -end $END -pid $PID -reps "${REPS:-300}" 2>&1 |
			grep -E "read: (series_select|agg)" | sed "s/^/$name /; s/|.*reps://"
		stop_server
	fi
done
