package influx

import (
	"bytes"
	"context"
	"encoding/json"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/tsdb/tsdb/influx/influxtest"
)

// t0 is 2023-11-14T22:13:20Z, 1700000000 s since the epoch.
const t0 = int64(1_700_000_000) * int64(time.Second)

func sec(n int64) int64 { return t0 + n*int64(time.Second) }

// testData is the table the statement tests read: cpu has three series
// (host c without a region), one with a gap at 30 s; mem has fields of
// every kind.
func testData() *influxtest.Backend {
	f := influxtest.New()
	f.Add("telegraf",
		influxtest.Row("cpu,host=a,region=eu", sec(0), "value", 1.0),
		influxtest.Row("cpu,host=a,region=eu", sec(10), "value", 2.0),
		influxtest.Row("cpu,host=a,region=eu", sec(20), "value", 3.0),
		influxtest.Row("cpu,host=a,region=eu", sec(40), "value", 5.0),
		influxtest.Row("cpu,host=b,region=us", sec(0), "value", 10.0),
		influxtest.Row("cpu,host=b,region=us", sec(10), "value", 20.0),
		influxtest.Row("cpu,host=b,region=us", sec(20), "value", 30.0),
		influxtest.Row("cpu,host=b,region=us", sec(30), "value", 40.0),
		influxtest.Row("cpu,host=c", sec(5), "value", 100.0),
		influxtest.Row("mem,host=a", sec(0), "used", 50, "active", "yes", "ok", true),
	)
	f.Add("other",
		influxtest.Row("nan,host=a", sec(0), "v", math.NaN()),
		influxtest.Row("nan,host=a", sec(1), "v", math.Inf(1)))
	return f
}

func run(t *testing.T, be Backend, q string, opts Options) string {
	t.Helper()
	e := NewExecutor(be, Config{Now: func() time.Time { return time.Unix(0, sec(60)) }})
	resp, err := e.Execute(context.Background(), q, opts)
	if err != nil {
		t.Fatalf("Execute(%q): %v", q, err)
	}
	b, err := json.Marshal(resp)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func compact(t *testing.T, s string) string {
	t.Helper()
	var b bytes.Buffer
	if err := json.Compact(&b, []byte(s)); err != nil {
		t.Fatalf("bad expected JSON %s: %v", s, err)
	}
	return b.String()
}

// The range every aggregate case reads: [t0, t0+60s).
const rng = ` time >= 1700000000s AND time < 1700000060s `

// Grafana's time filter as its InfluxDB data source expands $timeFilter
// (from t0 to t0+49.999 s).
const grafanaFilter = `time >= 1700000000000ms and time <= 1700000049999ms`

func TestStatements(t *testing.T) {
	cases := []struct {
		name, q string
		epoch   string
		db      string // "-": none
		want    string // the results array
	}{
		{name: "grafana graph panel", q: `SELECT mean("value") FROM "cpu" WHERE ("host" =~ /^a$/) AND ` + grafanaFilter + ` GROUP BY time(10s), "host" fill(null)`,
			want: `[{"statement_id":0,"series":[{"name":"cpu","tags":{"host":"a"},"columns":["time","mean"],"values":[[1700000000,1],[1700000010,2],[1700000020,3],[1700000030,null],[1700000040,5]]}]}]`},
		{name: "grafana graph panel with policy", q: `SELECT mean("value") FROM "autogen"."cpu" WHERE ("host" =~ /^a$/) AND ` + grafanaFilter + ` GROUP BY time(10s), "host" fill(null)`,
			want: `[{"statement_id":0,"series":[{"name":"cpu","tags":{"host":"a"},"columns":["time","mean"],"values":[[1700000000,1],[1700000010,2],[1700000020,3],[1700000030,null],[1700000040,5]]}]}]`},
		{name: "grafana template SHOW TAG VALUES", q: `SHOW TAG VALUES WITH KEY = "host"`,
			want: `[{"statement_id":0,"series":[{"name":"cpu","columns":["key","value"],"values":[["host","a"],["host","b"],["host","c"]]},{"name":"mem","columns":["key","value"],"values":[["host","a"]]}]}]`},
		{name: "grafana template SHOW MEASUREMENTS", q: `SHOW MEASUREMENTS`,
			want: `[{"statement_id":0,"series":[{"name":"measurements","columns":["name"],"values":[["cpu"],["mem"]]}]}]`},
		{name: "grafana template SHOW TAG VALUES FROM WHERE", q: `SHOW TAG VALUES FROM "cpu" WITH KEY = "host" WHERE "region" =~ /^eu/`,
			want: `[{"statement_id":0,"series":[{"name":"cpu","columns":["key","value"],"values":[["host","a"]]}]}]`},
		{name: "grafana query editor: policy, ::tag, $__interval", q: `SELECT mean("value") FROM "autogen"."cpu" WHERE ("host"::tag = 'b') AND time >= 1700000000000ms and time <= 1700000019999ms GROUP BY time(10s) fill(null)`,
			want: `[{"statement_id":0,"series":[{"name":"cpu","columns":["time","mean"],"values":[[1700000000,10],[1700000010,20]]}]}]`},
		{name: "grafana raw table", q: `SELECT "value"::field, "host"::tag FROM "cpu" WHERE time >= 1700000000000ms and time <= 1700000009999ms`,
			want: `[{"statement_id":0,"series":[{"name":"cpu","columns":["time","value","host"],"values":[[1700000000,1,"a"],[1700000000,10,"b"],[1700000005,100,"c"]]}]}]`},
		{name: "grafana editor: measurements", q: `SHOW MEASUREMENTS WITH MEASUREMENT =~ /(?i)CP/ LIMIT 100`,
			want: `[{"statement_id":0,"series":[{"name":"measurements","columns":["name"],"values":[["cpu"]]}]}]`},
		{name: "grafana editor: field keys", q: `SHOW FIELD KEYS FROM "cpu"`,
			want: `[{"statement_id":0,"series":[{"name":"cpu","columns":["fieldKey","fieldType"],"values":[["value","float"]]}]}]`},
		{name: "grafana editor: tag keys", q: `SHOW TAG KEYS FROM "cpu"`,
			want: `[{"statement_id":0,"series":[{"name":"cpu","columns":["tagKey"],"values":[["host"],["region"]]}]}]`},
		{name: "grafana editor: policies", q: `SHOW RETENTION POLICIES on "telegraf"`, db: "-",
			want: `[{"statement_id":0,"series":[{"columns":["name","duration","shardGroupDuration","replicaN","default"],"values":[["autogen","0s","168h0m0s",3,true]]}]}]`},
		{name: "fill none", q: `SELECT mean(value) FROM cpu WHERE host = 'a' AND ` + grafanaFilter + ` GROUP BY time(10s) fill(none)`,
			want: `[{"statement_id":0,"series":[{"name":"cpu","columns":["time","mean"],"values":[[1700000000,1],[1700000010,2],[1700000020,3],[1700000040,5]]}]}]`},
		{name: "fill previous", q: `SELECT mean(value) FROM cpu WHERE host = 'a' AND ` + grafanaFilter + ` GROUP BY time(10s) fill(previous)`,
			want: `[{"statement_id":0,"series":[{"name":"cpu","columns":["time","mean"],"values":[[1700000000,1],[1700000010,2],[1700000020,3],[1700000030,3],[1700000040,5]]}]}]`},
		{name: "fill linear", q: `SELECT mean(value) FROM cpu WHERE host = 'a' AND ` + grafanaFilter + ` GROUP BY time(10s) fill(linear)`,
			want: `[{"statement_id":0,"series":[{"name":"cpu","columns":["time","mean"],"values":[[1700000000,1],[1700000010,2],[1700000020,3],[1700000030,4],[1700000040,5]]}]}]`},
		{name: "fill number", q: `SELECT mean(value) FROM cpu WHERE host = 'a' AND ` + grafanaFilter + ` GROUP BY time(10s) fill(-1)`,
			want: `[{"statement_id":0,"series":[{"name":"cpu","columns":["time","mean"],"values":[[1700000000,1],[1700000010,2],[1700000020,3],[1700000030,-1],[1700000040,5]]}]}]`},
		{name: "count fills 0", q: `SELECT count(value) FROM cpu WHERE host = 'a' AND ` + grafanaFilter + ` GROUP BY time(10s)`,
			want: `[{"statement_id":0,"series":[{"name":"cpu","columns":["time","count"],"values":[[1700000000,1],[1700000010,1],[1700000020,1],[1700000030,0],[1700000040,1]]}]}]`},
		{name: "pushed-down functions", q: `SELECT count(value), sum(value), min(value), max(value), first(value), last(value), spread(value), mean(value) AS m FROM cpu WHERE` + rng,
			want: `[{"statement_id":0,"series":[{"name":"cpu","columns":["time","count","sum","min","max","first","last","spread","m"],"values":[[1700000000,9,211,1,100,1,5,99,23.444444444444443]]}]}]`},
		{name: "front-end functions", q: `SELECT median(value), percentile(value, 90), stddev(value) FROM cpu WHERE` + rng + `GROUP BY host`,
			want: `[{"statement_id":0,"series":[{"name":"cpu","tags":{"host":"a"},"columns":["time","median","percentile","stddev"],"values":[[1700000000,2.5,5,1.707825127659933]]},` +
				`{"name":"cpu","tags":{"host":"b"},"columns":["time","median","percentile","stddev"],"values":[[1700000000,25,40,12.909944487358056]]},` +
				`{"name":"cpu","tags":{"host":"c"},"columns":["time","median","percentile","stddev"],"values":[[1700000000,100,100,null]]}]}]`},
		{name: "group by star", q: `SELECT max(value) FROM cpu WHERE` + rng + `GROUP BY *`,
			want: `[{"statement_id":0,"series":[{"name":"cpu","tags":{"host":"a","region":"eu"},"columns":["time","max"],"values":[[1700000000,5]]},` +
				`{"name":"cpu","tags":{"host":"b","region":"us"},"columns":["time","max"],"values":[[1700000000,40]]},` +
				`{"name":"cpu","tags":{"host":"c"},"columns":["time","max"],"values":[[1700000000,100]]}]}]`},
		{name: "group by a tag some series lack", q: `SELECT count(value) FROM cpu WHERE` + rng + `GROUP BY region`,
			want: `[{"statement_id":0,"series":[{"name":"cpu","tags":{"region":""},"columns":["time","count"],"values":[[1700000000,1]]},` +
				`{"name":"cpu","tags":{"region":"eu"},"columns":["time","count"],"values":[[1700000000,4]]},` +
				`{"name":"cpu","tags":{"region":"us"},"columns":["time","count"],"values":[[1700000000,4]]}]}]`},
		{name: "lone last takes its time; slimit soffset", q: `SELECT last(value) FROM cpu WHERE` + rng + `GROUP BY host SLIMIT 1 SOFFSET 1`,
			want: `[{"statement_id":0,"series":[{"name":"cpu","tags":{"host":"b"},"columns":["time","last"],"values":[[1700000030,40]]}]}]`},
		{name: "or, parentheses, missing tag is empty", q: `SELECT count(value) FROM cpu WHERE (host = 'a' OR host = 'c') AND region != 'us' AND` + rng,
			want: `[{"statement_id":0,"series":[{"name":"cpu","columns":["time","count"],"values":[[1700000000,5]]}]}]`},
		{name: "not match", q: `SELECT count(value) FROM cpu WHERE region !~ /^e/ AND` + rng,
			want: `[{"statement_id":0,"series":[{"name":"cpu","columns":["time","count"],"values":[[1700000000,5]]}]}]`},
		{name: "group by time with offset", q: `SELECT sum(value) FROM cpu WHERE host = 'b' AND time >= 1700000000s AND time < 1700000030s GROUP BY time(20s, 5s)`,
			want: `[{"statement_id":0,"series":[{"name":"cpu","columns":["time","sum"],"values":[[1699999985,10],[1700000005,50],[1700000025,null]]}]}]`},
		{name: "now()", q: `SELECT count(value) FROM cpu WHERE time > now() - 1h`,
			want: `[{"statement_id":0,"series":[{"name":"cpu","columns":["time","count"],"values":[[1699996460,9]]}]}]`},
		{name: "rfc3339", q: `SELECT count(value) FROM cpu WHERE time >= '2023-11-14T22:13:20Z' AND time <= '2023-11-14T22:13:29Z'`,
			want: `[{"statement_id":0,"series":[{"name":"cpu","columns":["time","count"],"values":[[1700000000,3]]}]}]`},
		{name: "bare ns", q: `SELECT count(value) FROM cpu WHERE time >= 1700000010000000000 AND time < 1700000020000000000`,
			want: `[{"statement_id":0,"series":[{"name":"cpu","columns":["time","count"],"values":[[1700000010,2]]}]}]`},
		{name: "empty range", q: `SELECT count(value) FROM cpu WHERE time >= 1700000020s AND time < 1700000010s`,
			want: `[{"statement_id":0}]`},
		{name: "raw", q: `SELECT value FROM cpu WHERE host = 'a' AND time >= 1700000000s`,
			want: `[{"statement_id":0,"series":[{"name":"cpu","columns":["time","value"],"values":[[1700000000,1],[1700000010,2],[1700000020,3],[1700000040,5]]}]}]`},
		{name: "raw star", q: `SELECT * FROM cpu WHERE host = 'c'`,
			want: `[{"statement_id":0,"series":[{"name":"cpu","columns":["time","host","value"],"values":[[1700000005,"c",100]]}]}]`},
		{name: "raw star of several kinds", q: `SELECT * FROM mem`,
			want: `[{"statement_id":0,"series":[{"name":"mem","columns":["time","active","host","ok","used"],"values":[[1700000000,"yes","a",true,50]]}]}]`},
		{name: "raw with a tag, limit", q: `SELECT value, region FROM cpu WHERE region = 'eu' LIMIT 2`,
			want: `[{"statement_id":0,"series":[{"name":"cpu","columns":["time","value","region"],"values":[[1700000000,1,"eu"],[1700000010,2,"eu"]]}]}]`},
		{name: "raw merges series by time", q: `SELECT value FROM cpu WHERE time < 1700000006s`,
			want: `[{"statement_id":0,"series":[{"name":"cpu","columns":["time","value"],"values":[[1700000000,1],[1700000000,10],[1700000005,100]]}]}]`},
		{name: "order by time desc, limit offset", q: `SELECT value FROM cpu WHERE host = 'b' ORDER BY time DESC LIMIT 2 OFFSET 1`,
			want: `[{"statement_id":0,"series":[{"name":"cpu","columns":["time","value"],"values":[[1700000020,30],[1700000010,20]]}]}]`},
		{name: "aggregate desc limit", q: `SELECT mean(value) FROM cpu WHERE host = 'a' AND ` + grafanaFilter + ` GROUP BY time(10s) ORDER BY time DESC LIMIT 2`,
			want: `[{"statement_id":0,"series":[{"name":"cpu","columns":["time","mean"],"values":[[1700000040,5],[1700000030,null]]}]}]`},
		{name: "raw group by tag", q: `SELECT value FROM cpu WHERE time < 1700000015s GROUP BY host`,
			want: `[{"statement_id":0,"series":[{"name":"cpu","tags":{"host":"a"},"columns":["time","value"],"values":[[1700000000,1],[1700000010,2]]},` +
				`{"name":"cpu","tags":{"host":"b"},"columns":["time","value"],"values":[[1700000000,10],[1700000010,20]]},` +
				`{"name":"cpu","tags":{"host":"c"},"columns":["time","value"],"values":[[1700000005,100]]}]}]`},
		{name: "epoch ms", q: `SELECT value FROM cpu WHERE host = 'c'`, epoch: "ms",
			want: `[{"statement_id":0,"series":[{"name":"cpu","columns":["time","value"],"values":[[1700000005000,100]]}]}]`},
		{name: "epoch absent: RFC 3339", q: `SELECT value FROM cpu WHERE host = 'c'`, epoch: "-",
			want: `[{"statement_id":0,"series":[{"name":"cpu","columns":["time","value"],"values":[["2023-11-14T22:13:25Z",100]]}]}]`},
		{name: "errors per statement", q: `SELECT mean(value) FROM cpu WHERE` + rng + `; SELECT foo(value) FROM cpu; SELECT value FROM cpu WHERE value > 1; SELECT mean(value), value FROM cpu; SHOW MEASUREMENTS LIMIT 1`,
			want: `[{"statement_id":0,"series":[{"name":"cpu","columns":["time","mean"],"values":[[1700000000,23.444444444444443]]}]},` +
				`{"statement_id":1,"error":"function foo() is not supported (supported: count, sum, mean, median, min, max, first, last, spread, stddev, percentile)"},` +
				`{"statement_id":2,"error":"unsupported condition: value \u003e 1 (conditions on fields are not supported; tsdb filters on time and tags only)"},` +
				`{"statement_id":3,"error":"mixing aggregate and non-aggregate queries is not supported"},` +
				`{"statement_id":4,"series":[{"name":"measurements","columns":["name"],"values":[["cpu"]]}]}]`},
		{name: "database required", q: `SELECT value FROM cpu; SHOW MEASUREMENTS; SHOW DATABASES`, db: "-",
			want: `[{"statement_id":0,"error":"database name required"},{"statement_id":1,"error":"database name required"},` +
				`{"statement_id":2,"series":[{"name":"databases","columns":["name"],"values":[["other"],["telegraf"]]}]}]`},
		{name: "database in the statement", q: `SELECT count(value) FROM telegraf.autogen.cpu WHERE` + rng, db: "-",
			want: `[{"statement_id":0,"series":[{"name":"cpu","columns":["time","count"],"values":[[1700000000,9]]}]}]`},
		{name: "database not found", q: `SELECT value FROM cpu; SHOW TAG KEYS`, db: "nope",
			want: `[{"statement_id":0,"error":"database not found: nope"},{"statement_id":1,"error":"database not found: nope"}]`},
		{name: "unknown policy", q: `SELECT value FROM "weekly"."cpu"`,
			want: `[{"statement_id":0,"error":"retention policy not found: weekly"}]`},
		{name: "show measurements regex limit", q: `SHOW MEASUREMENTS WITH MEASUREMENT =~ /^c/ LIMIT 1`,
			want: `[{"statement_id":0,"series":[{"name":"measurements","columns":["name"],"values":[["cpu"]]}]}]`},
		{name: "show measurements where", q: `SHOW MEASUREMENTS WHERE region = 'eu'`,
			want: `[{"statement_id":0,"series":[{"name":"measurements","columns":["name"],"values":[["cpu"]]}]}]`},
		{name: "show tag values in", q: `SHOW TAG VALUES FROM cpu WITH KEY IN ("region", "nope")`,
			want: `[{"statement_id":0,"series":[{"name":"cpu","columns":["key","value"],"values":[["region","eu"],["region","us"]]}]}]`},
		{name: "show tag values regex", q: `SHOW TAG VALUES FROM cpu WITH KEY =~ /reg|ho/ WHERE host != 'a'`,
			want: `[{"statement_id":0,"series":[{"name":"cpu","columns":["key","value"],"values":[["host","b"],["host","c"],["region","us"]]}]}]`},
		{name: "show tag keys", q: `SHOW TAG KEYS`,
			want: `[{"statement_id":0,"series":[{"name":"cpu","columns":["tagKey"],"values":[["host"],["region"]]},{"name":"mem","columns":["tagKey"],"values":[["host"]]}]}]`},
		{name: "show tag keys from", q: `SHOW TAG KEYS FROM "mem"`,
			want: `[{"statement_id":0,"series":[{"name":"mem","columns":["tagKey"],"values":[["host"]]}]}]`},
		{name: "show field keys", q: `SHOW FIELD KEYS`,
			want: `[{"statement_id":0,"series":[{"name":"cpu","columns":["fieldKey","fieldType"],"values":[["value","float"]]},` +
				`{"name":"mem","columns":["fieldKey","fieldType"],"values":[["active","string"],["ok","boolean"],["used","integer"]]}]}]`},
		{name: "show field keys from", q: `SHOW FIELD KEYS FROM cpu`,
			want: `[{"statement_id":0,"series":[{"name":"cpu","columns":["fieldKey","fieldType"],"values":[["value","float"]]}]}]`},
		{name: "show with a time range (ignored) and the database in FROM", q: `SHOW TAG VALUES FROM telegraf.autogen.cpu WITH KEY = "region" WHERE time > now() - 1h; SHOW FIELD KEYS FROM telegraf..mem`, db: "-",
			want: `[{"statement_id":0,"series":[{"name":"cpu","columns":["key","value"],"values":[["region","eu"],["region","us"]]}]},` +
				`{"statement_id":1,"series":[{"name":"mem","columns":["fieldKey","fieldType"],"values":[["active","string"],["ok","boolean"],["used","integer"]]}]}]`},
		{name: "show series", q: `SHOW SERIES FROM cpu WHERE host != 'b'`,
			want: `[{"statement_id":0,"series":[{"columns":["key"],"values":[["cpu,host=a,region=eu"],["cpu,host=c"]]}]}]`},
		{name: "show retention policies", q: `SHOW RETENTION POLICIES ON telegraf`, db: "-",
			want: `[{"statement_id":0,"series":[{"columns":["name","duration","shardGroupDuration","replicaN","default"],"values":[["autogen","0s","168h0m0s",3,true]]}]}]`},
		{name: "NaN and Inf are null", q: `SELECT v FROM nan; SELECT mean(v) FROM nan`, db: "other",
			want: `[{"statement_id":0,"series":[{"name":"nan","columns":["time","v"],"values":[[1700000000,null],[1700000001,null]]}]},` +
				`{"statement_id":1,"series":[{"name":"nan","columns":["time","mean"],"values":[[0,null]]}]}]`},
		{name: "zero interval", q: `SELECT mean(value) FROM cpu GROUP BY time(0s)`,
			want: `[{"statement_id":0,"error":"GROUP BY time(0s): the interval must be positive"}]`},
		{name: "unsupported statement", q: `SHOW USERS`,
			want: `[{"statement_id":0,"error":"statement not supported: ShowUsers"}]`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			opts := Options{DB: "telegraf", Epoch: "s"}
			switch tc.db {
			case "-":
				opts.DB = ""
			case "":
			default:
				opts.DB = tc.db
			}
			switch tc.epoch {
			case "-":
				opts.Epoch = ""
			case "":
			default:
				opts.Epoch = tc.epoch
			}
			got := run(t, testData(), tc.q, opts)
			want := `{"results":` + compact(t, tc.want) + `}`
			if got != want {
				t.Errorf("%s\n got %s\nwant %s", tc.q, got, want)
			}
		})
	}
}

func TestParseErrorFailsTheRequest(t *testing.T) {
	e := NewExecutor(testData(), Config{})
	for _, q := range []string{`SELEKT 1`, `SELECT value FROM cpu; DROP`} {
		if _, err := e.Execute(context.Background(), q, Options{DB: "telegraf"}); err == nil || !strings.Contains(err.Error(), "found") {
			t.Errorf("Execute(%q) = %v, want a parse error", q, err)
		}
	}
}

func TestBoundParameters(t *testing.T) {
	got := run(t, testData(), `SELECT value FROM cpu WHERE host = $h`, Options{DB: "telegraf", Epoch: "s", Params: map[string]any{"h": "c"}})
	want := `{"results":[{"statement_id":0,"series":[{"name":"cpu","columns":["time","value"],"values":[[1700000005,100]]}]}]}`
	if got != want {
		t.Errorf("got %s\nwant %s", got, want)
	}
}

// TestPushDown checks which backend methods a statement calls: the
// mergeable functions never read raw rows.
func TestPushDown(t *testing.T) {
	cases := []struct{ q, want string }{
		{`SELECT mean(value), count(value), spread(value) FROM cpu WHERE` + rng + `GROUP BY time(10s), host`, "Aggregate"},
		{`SELECT median(value) FROM cpu WHERE` + rng, "Query"},
		{`SELECT mean(value), percentile(value, 50) FROM cpu WHERE` + rng, "Aggregate,Query"},
		{`SHOW MEASUREMENTS`, "FieldKeys"},
		{`SHOW TAG VALUES WITH KEY = host`, "SeriesKeys"},
	}
	for _, tc := range cases {
		f := testData()
		run(t, f, tc.q, Options{DB: "telegraf"})
		if got := strings.Join(f.Calls(), ","); got != tc.want {
			t.Errorf("%s: backend calls %s, want %s", tc.q, got, tc.want)
		}
	}
}

func TestLimitsRefuse(t *testing.T) {
	e := NewExecutor(testData(), Config{MaxRawRows: 3, MaxSeries: 2, MaxBuckets: 10})
	resp, err := e.Execute(context.Background(), `SELECT value FROM cpu; SHOW SERIES; SELECT mean(value) FROM cpu WHERE time >= 1700000000s AND time < 1700000050s GROUP BY time(10s), host; SELECT value FROM cpu LIMIT 2 OFFSET 1`, Options{DB: "telegraf", Epoch: "s"})
	if err != nil {
		t.Fatal(err)
	}
	for i, want := range []string{"reads 3 rows or more", "more than 2 series", "more than 10 buckets"} {
		if !strings.Contains(resp.Results[i].Err, want) {
			t.Errorf("statement %d: error %q, want it to name %q", i, resp.Results[i].Err, want)
		}
	}
	// A range of more buckets than the limit is refused before any read.
	f := testData()
	resp2, _ := NewExecutor(f, Config{MaxBuckets: 10}).Execute(context.Background(),
		`SELECT mean(value) FROM cpu WHERE time >= 1700000000s AND time < 1700000200s GROUP BY time(10s)`, Options{DB: "telegraf"})
	if !strings.Contains(resp2.Results[0].Err, "more than 10 buckets") || len(f.Calls()) != 0 {
		t.Errorf("error %q after calls %v, want a refusal before any", resp2.Results[0].Err, f.Calls())
	}
	// LIMIT of one series in time order is pushed down: no refusal.
	got, _ := json.Marshal(resp.Results[3])
	if want := `{"statement_id":3,"series":[{"name":"cpu","columns":["time","value"],"values":[[1700000000,10],[1700000005,100]]}]}`; string(got) != want {
		t.Errorf("pushed-down LIMIT: got %s, want %s", got, want)
	}
}

func TestDatabaseAndDeleteStatements(t *testing.T) {
	f := testData()
	steps := []struct{ q, want string }{
		{`CREATE DATABASE metrics WITH DURATION 7d`, `[{"statement_id":0}]`},
		{`CREATE DATABASE metrics`, `[{"statement_id":0}]`},
		{`SHOW DATABASES`, `[{"statement_id":0,"series":[{"name":"databases","columns":["name"],"values":[["metrics"],["other"],["telegraf"]]}]}]`},
		{`SHOW RETENTION POLICIES ON metrics`, `[{"statement_id":0,"series":[{"columns":["name","duration","shardGroupDuration","replicaN","default"],"values":[["autogen","168h0m0s","24h0m0s",3,true]]}]}]`},
		{`ALTER RETENTION POLICY autogen ON metrics DURATION 30d`, `[{"statement_id":0}]`},
		{`SHOW RETENTION POLICIES ON metrics`, `[{"statement_id":0,"series":[{"columns":["name","duration","shardGroupDuration","replicaN","default"],"values":[["autogen","720h0m0s","24h0m0s",3,true]]}]}]`},
		{`ALTER RETENTION POLICY autogen ON metrics DURATION INF`, `[{"statement_id":0}]`},
		{`ALTER RETENTION POLICY autogen ON metrics REPLICATION 2`, `[{"statement_id":0,"error":"ALTER RETENTION POLICY can change only the DURATION of autogen (replication and shard duration are the table's own)"}]`},
		{`ALTER RETENTION POLICY weekly ON metrics DURATION 1d`, `[{"statement_id":0,"error":"retention policy \"weekly\" is not supported: a tsdb database has one policy, autogen"}]`},
		{`DROP DATABASE metrics; DROP DATABASE metrics`, `[{"statement_id":0},{"statement_id":1}]`},
		{`DROP SERIES FROM cpu WHERE host = 'a'`, `[{"statement_id":0}]`},
		{`SHOW SERIES`, `[{"statement_id":0,"series":[{"columns":["key"],"values":[["cpu,host=b,region=us"],["cpu,host=c"],["mem,host=a"]]}]}]`},
		{`DELETE FROM cpu WHERE host = 'b' AND time < 1700000015s`, `[{"statement_id":0}]`},
		{`SELECT value FROM cpu`, `[{"statement_id":0,"series":[{"name":"cpu","columns":["time","value"],"values":[[1700000005,100],[1700000020,30],[1700000030,40]]}]}]`},
		{`DROP SERIES FROM cpu WHERE time > 0`, `[{"statement_id":0,"error":"DROP SERIES doesn't support time in WHERE clause"}]`},
		{`DELETE WHERE time < 1700000025s`, `[{"statement_id":0}]`},
		{`SELECT value FROM cpu`, `[{"statement_id":0,"series":[{"name":"cpu","columns":["time","value"],"values":[[1700000030,40]]}]}]`},
		{`DROP MEASUREMENT cpu`, `[{"statement_id":0}]`},
		{`SHOW MEASUREMENTS`, `[{"statement_id":0}]`},
	}
	for _, s := range steps {
		got := run(t, f, s.q, Options{DB: "telegraf", Epoch: "s"})
		if want := `{"results":` + compact(t, s.want) + `}`; got != want {
			t.Fatalf("%s\n got %s\nwant %s", s.q, got, want)
		}
	}
}

// TestRawRowsArenaGivenBack: a raw SELECT's rows are lent by an arena
// (model.RowArena) that the statement gives back once it has copied what
// it answers; the fake backend overwrites the rows of a given-back arena
// at the next query, so a statement whose answer still read them would
// print "poisoned" once the next statement of the request has read.
func TestRawRowsArenaGivenBack(t *testing.T) {
	be := testData()
	opts := Options{DB: "telegraf", Epoch: "s"}
	first, second := `SELECT value FROM cpu WHERE host = 'a'`, `SELECT * FROM mem`
	alone := []string{run(t, be, first, opts), run(t, be, second, opts)}
	both := run(t, be, first+"; "+second, opts)
	if strings.Contains(both, "poisoned") {
		t.Fatalf("a statement's answer read rows its arena had given back: %s", both)
	}
	var a0, a1, b struct{ Results []json.RawMessage }
	for _, x := range []struct {
		s string
		v any
	}{{alone[0], &a0}, {alone[1], &a1}, {both, &b}} {
		if err := json.Unmarshal([]byte(x.s), x.v); err != nil {
			t.Fatal(err)
		}
	}
	if len(b.Results) != 2 || len(a0.Results) != 1 || len(a1.Results) != 1 ||
		!strings.Contains(string(a0.Results[0]), "[1700000010,2]") ||
		strings.Replace(string(b.Results[1]), `"statement_id":1`, `"statement_id":0`, 1) != string(a1.Results[0]) ||
		string(b.Results[0]) != string(a0.Results[0]) {
		t.Fatalf("statements together:\n%s\nalone:\n%s\n%s", both, alone[0], alone[1])
	}
}
