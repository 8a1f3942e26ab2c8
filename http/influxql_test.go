package http

import (
	"encoding/json"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/tsdb/tsdb/influx/influxtest"
)

func influxServer(t *testing.T) (string, *influxtest.Backend) {
	t.Helper()
	be := influxtest.New()
	t0 := int64(1_700_000_000) * int64(time.Second)
	be.Add("telegraf",
		influxtest.Row("cpu,host=a", t0, "value", 1.0),
		influxtest.Row("cpu,host=a", t0+int64(10*time.Second), "value", 3.0),
		influxtest.Row("cpu,host=b", t0, "value", 10.0))
	return "http://" + startServer(t, NewServer(Config{MaxBodyBytes: 1 << 16, Influx: be}, nil)), be
}

func TestInfluxQueryHTTP(t *testing.T) {
	base, _ := influxServer(t)
	const mean = `SELECT mean(value) FROM cpu WHERE time >= 1700000000s AND time < 1700000020s GROUP BY host`
	const meanAnswer = `{"statement_id":0,"series":[{"name":"cpu","tags":{"host":"a"},"columns":["time","mean"],"values":[[1700000000,2]]},` +
		`{"name":"cpu","tags":{"host":"b"},"columns":["time","mean"],"values":[[1700000000,10]]}]}`
	form := func(kv ...string) url.Values {
		v := url.Values{}
		for i := 0; i < len(kv); i += 2 {
			v.Set(kv[i], kv[i+1])
		}
		return v
	}
	cases := []struct {
		name, method string
		query        url.Values // in the URL
		body         url.Values // form-encoded
		ctype, raw   string     // a raw body instead
		status       int
		want         string
	}{
		{name: "GET", method: "GET", query: form("db", "telegraf", "epoch", "s", "q", mean),
			status: 200, want: `{"results":[` + meanAnswer + `]}`},
		{name: "POST form", method: "POST", query: form("db", "telegraf"), body: form("q", mean, "epoch", "s"),
			status: 200, want: `{"results":[` + meanAnswer + `]}`},
		{name: "POST q in the URL", method: "POST", query: form("db", "telegraf", "q", mean, "epoch", "s"),
			status: 200, want: `{"results":[` + meanAnswer + `]}`},
		{name: "POST vnd.influxql body", method: "POST", query: form("db", "telegraf", "epoch", "s"), ctype: "application/vnd.influxql", raw: mean,
			status: 200, want: `{"results":[` + meanAnswer + `]}`},
		{name: "several statements, one failing", method: "POST", body: form("db", "telegraf", "q", "SHOW DATABASES;SELECT value FROM nope..cpu;SHOW MEASUREMENTS"),
			status: 200, want: `{"results":[{"statement_id":0,"series":[{"name":"databases","columns":["name"],"values":[["telegraf"]]}]},` +
				`{"statement_id":1,"error":"database not found: nope"},` +
				`{"statement_id":2,"series":[{"name":"measurements","columns":["name"],"values":[["cpu"]]}]}]}`},
		{name: "bound parameters", method: "GET", query: form("db", "telegraf", "epoch", "ms", "q", `SELECT value FROM cpu WHERE host = $h`, "params", `{"h":"b"}`),
			status: 200, want: `{"results":[{"statement_id":0,"series":[{"name":"cpu","columns":["time","value"],"values":[[1700000000000,10]]}]}]}`},
		{name: "RFC 3339 times without epoch", method: "GET", query: form("db", "telegraf", "q", `SELECT value FROM cpu WHERE host = 'b'`, "chunked", "true"),
			status: 200, want: `{"results":[{"statement_id":0,"series":[{"name":"cpu","columns":["time","value"],"values":[["2023-11-14T22:13:20Z",10]]}]}]}`},
		{name: "parse error", method: "GET", query: form("q", "SELEKT 1"),
			status: 400, want: `{"error":"error parsing query: found SELEKT, expected SELECT, DELETE, SHOW, CREATE, DROP, EXPLAIN, GRANT, REVOKE, ALTER, SET, KILL at line 1, char 1"}`},
		{name: "missing q", method: "GET", query: form("db", "telegraf"),
			status: 400, want: `{"error":"missing required parameter \"q\""}`},
		{name: "unknown epoch is ns", method: "GET", query: form("db", "telegraf", "q", `SELECT value FROM cpu WHERE host = 'b'`, "epoch", "d"),
			status: 200, want: `{"results":[{"statement_id":0,"series":[{"name":"cpu","columns":["time","value"],"values":[[1700000000000000000,10]]}]}]}`},
		{name: "bad params", method: "GET", query: form("q", "SHOW DATABASES", "params", "{"),
			status: 400, want: `{"error":"error parsing query parameters: unexpected EOF"}`},
		{name: "method", method: "PUT", query: form("q", "SHOW DATABASES"),
			status: 405, want: `{"error":"method PUT not allowed on /query (allowed: GET, POST)"}`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			u := base + "/query?" + tc.query.Encode()
			var req *http.Request
			var err error
			switch {
			case tc.raw != "":
				req, err = http.NewRequest(tc.method, u, strings.NewReader(tc.raw))
				req.Header.Set("Content-Type", tc.ctype)
			case tc.body != nil:
				req, err = http.NewRequest(tc.method, u, strings.NewReader(tc.body.Encode()))
				req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
			default:
				req, err = http.NewRequest(tc.method, u, nil)
			}
			if err != nil {
				t.Fatal(err)
			}
			got := do(t, req)
			if got.status != tc.status || got.body != tc.want {
				t.Errorf("%d %s\nwant %d %s", got.status, got.body, tc.status, tc.want)
			}
		})
	}
}

func TestInfluxQueryPrettyAndLimits(t *testing.T) {
	base, _ := influxServer(t)
	got := do(t, mustRequest(t, "GET", base+"/query?pretty=true&q=SHOW+DATABASES", ""))
	var v any
	if got.status != 200 || !strings.Contains(got.body, "\n    ") || json.Unmarshal([]byte(got.body), &v) != nil {
		t.Errorf("pretty: %d %q", got.status, got.body)
	}
	got = postOverLimit(t, strings.TrimPrefix(base, "http://"), "/query", map[string]string{"Content-Type": "application/x-www-form-urlencoded"}, 1<<17)
	if got.status != 413 {
		t.Errorf("body over the limit: %d %s", got.status, got.body)
	}
}

func TestInfluxQueryNotConfigured(t *testing.T) {
	base := "http://" + startServer(t, NewServer(Config{}, nil))
	got := do(t, mustRequest(t, "GET", base+"/query?q=SHOW+DATABASES", ""))
	if got.status != 501 || got.body != `{"error":"influxql not configured"}` {
		t.Errorf("%d %s", got.status, got.body)
	}
}

func mustRequest(t *testing.T, method, u, body string) *http.Request {
	t.Helper()
	req, err := http.NewRequest(method, u, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	return req
}
