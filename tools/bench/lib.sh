# lib.sh: what the single-server scripts share. Source it, then:
#   start_server BIN DIR [tsdb dev flags...]  fresh DIR, tsdb dev on 18085 (pprof 6065);
#                                             sets PID, and END, the end of the data range
#   write_harness NAME [loadgen flags...]     the harness's write phase (may run in a pipe)
#   start_vm DIR [loadgen flags...]           fresh DIR, VictoriaMetrics on 8428 with the
#                                             harness's write in it, flushed; sets PID, END
#   launch_vm DIR                             fresh DIR, VictoriaMetrics on 8428, empty;
#                                             sets PID, END
#   vm_select_url                             the harness's series_select for VictoriaMetrics
#                                             (after END is set)
#   stop_server                               stops it (either)
#   server_ticks                              the server's (PID) CPU so far, in 1/100 s
#   series_query_url QUERY                    the harness's series_count (QUERY count) or
#                                             series_select (select) on tsdb (after END is set)
#   qs_cpu NAME MODE URL                      qs ($QS) GETs URL for 3 s, MODE back-to-back,
#                                             decode or pause; prints its p50 and the
#                                             server's (PID) CPU per query, from /proc
LG=${LG:-$HOME/.cache/tsdb-peers/bin/loadgen}
BASE=http://127.0.0.1:18085

start_server() {
	local bin=$1 dir=$2
	shift 2
	rm -rf "$dir" && mkdir -p "$dir"
	"$bin" dev --servers 1 --port 18085 --etcd-port 23795 --data "$dir/data" --pprof-addr 127.0.0.1:6065 "$@" >"$dir/log" 2>&1 &
	PID=$!
	sleep 2
	END=$(($(date +%s) / 60 * 60 - 60))
}

write_harness() {
	local name=$1
	shift
	"$LG" -url $BASE -api tsdb -mode write -end $END -pid $PID -label "$name" "$@" 2>&1
}

stop_server() {
	kill $PID
	wait $PID 2>/dev/null
}

VM=${VM:-$(cd "$(dirname "${BASH_SOURCE[0]}")/../../../shared/peers/bin" && pwd)/victoria-metrics}
VMBASE=http://127.0.0.1:8428

launch_vm() {
	local dir=$1
	rm -rf "$dir" && mkdir -p "$dir"
	"$VM" -httpListenAddr=127.0.0.1:8428 -storageDataPath="$dir" -loggerLevel=WARN >"$dir/log" 2>&1 &
	PID=$!
	sleep 2
	END=$(($(date +%s) / 60 * 60 - 60))
}

start_vm() {
	launch_vm "$1"
	shift
	"$LG" -url $VMBASE -api prom -mode write -end $END -pid $PID -c 4 "$@" 2>&1 | grep "points/s ("
	curl -s $VMBASE/internal/force_flush
}

vm_select_url() {
	local t
	t=$(python3 -c "print('%.3f' % ($END - 0.001))")
	echo "$VMBASE/api/v1/query?nocache=1&time=$t&query=cpu_usage_user%7Bhost%3D%22host042%22%7D%5B660s%5D"
}

server_ticks() { awk '{print $14 + $15}' /proc/$PID/stat; }

qs_cpu() {
	local name=$1 mode=$2 url=$3 flags= c0 c1 out n
	[ "$mode" = decode ] && flags=-decode
	[ "$mode" = pause ] && flags="-pause 10ms"
	c0=$(server_ticks)
	out=$("$QS" -url "$url" -seconds 3 $flags)
	c1=$(server_ticks)
	n=$(echo "$out" | grep -oE 'n=[0-9]+' | cut -d= -f2 | paste -sd+ | bc)
	echo "$name $mode: $(echo "$out" | tail -1 | grep -oE 'p50=[0-9.]+ms') server CPU $(((c1 - c0) * 10000000 / n / 1000)) µs a query over $n"
}

series_query_url() {
	local u="$BASE/api/v1/tables/bench/query?from=$(((END - 600) * 1000000000))&to=$((END * 1000000000))&fields=usage_user&series=cpu%2Chost%3Dhost042%2Cregion%3Dr2"
	if [ "$1" = select ]; then echo "$u&limit=1000000"; else echo "$u&agg=count&step=10m0s"; fi
}
