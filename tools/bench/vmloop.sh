#!/bin/bash
# vmloop.sh: VictoriaMetrics, the harness's write, WAIT s (default 10), then
# one Python client repeating the harness's series_select (PromQL) for
# 5.5 s without compression and 5.5 s with gzip asked: the p50 of each,
# rest.sh's loop for VictoriaMetrics.
set -u
. "$(dirname "$0")/lib.sh"
start_vm "${OUT:-/tmp/tsdb-bench}/vmloop"
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
