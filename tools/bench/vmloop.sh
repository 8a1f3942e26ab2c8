#!/bin/bash
# vmloop.sh: VictoriaMetrics, the harness's write, WAIT s (default 10), then
# one Python client repeating the harness's series_select (PromQL) for
# 5.5 s without compression and 5.5 s with gzip asked: the p50 of each,
# rest.sh's loop for VictoriaMetrics.
set -u
. "$(dirname "$0")/lib.sh"
VM=${VM:-$(cd "$(dirname "$0")/../../../shared/peers/bin" && pwd)/victoria-metrics}
D=${OUT:-/tmp/tsdb-bench}/vmloop
rm -rf "$D" && mkdir -p "$D"
"$VM" -httpListenAddr=127.0.0.1:8428 -storageDataPath="$D" -loggerLevel=WARN >"$D/log" 2>&1 &
PID=$!
sleep 2
END=$(($(date +%s) / 60 * 60 - 60))
"$LG" -url http://127.0.0.1:8428 -api prom -mode write -end $END -pid $PID -c 4 2>&1 | grep "points/s ("
curl -s http://127.0.0.1:8428/internal/force_flush
sleep "${WAIT:-10}"
python3 - "$END" <<'PY'
import sys, time, urllib.parse, urllib.request
end = int(sys.argv[1])
q = "http://127.0.0.1:8428/api/v1/query?nocache=1&time=%.3f&query=%s" % (
    end - 0.001, urllib.parse.quote('cpu_usage_user{host="host042"}[660s]'))
for gz in (False, True):
    t0, ls = time.time(), []
    while time.time() - t0 < 5.5:
        req = urllib.request.Request(q, headers={"Accept-Encoding": "gzip"} if gz else {})
        a = time.time(); body = urllib.request.urlopen(req).read(); ls.append((time.time() - a) * 1000)
    ls.sort(); print("vm select loop gzip=%s n=%d p50=%.2f ms, %d bytes" % (gz, len(ls), ls[len(ls) // 2], len(body)))
PY
stop_server
