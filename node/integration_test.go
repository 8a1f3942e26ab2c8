package node

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"math"
	"net/url"
	"os"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/klauspost/compress/gzip"
	"github.com/klauspost/compress/zstd"

	"github.com/tsdb/tsdb/http/api"
)

const t0 = int64(1_767_225_600_000_000_000) // 2026-01-01T00:00:00Z

func createTable(c *client, name string) {
	c.t.Helper()
	c.must(201, c.do("POST", "/api/v1/tables", []byte(`{"name":"`+name+`"}`)), nil)
}

func queryRaw(c *client, table, params string) api.RawQueryResponse {
	c.t.Helper()
	var out api.RawQueryResponse
	c.must(200, c.do("GET", "/api/v1/tables/"+table+"/query?"+params, nil), &out)
	return out
}

func queryAgg(c *client, table, params string) api.AggQueryResponse {
	c.t.Helper()
	var out api.AggQueryResponse
	c.must(200, c.do("GET", "/api/v1/tables/"+table+"/query?"+params, nil), &out)
	return out
}

func gz(t testing.TB, b []byte) []byte {
	var buf bytes.Buffer
	w := gzip.NewWriter(&buf)
	w.Write(b)
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

func zst(t testing.TB, b []byte) []byte {
	enc, err := zstd.NewWriter(nil)
	if err != nil {
		t.Fatal(err)
	}
	defer enc.Close()
	return enc.EncodeAll(b, nil)
}

// TestEndToEnd creates a table, inserts through every format and encoding,
// queries raw and aggregated, restarts the server on the same data dir and
// gets the same answers.
func TestEndToEnd(t *testing.T) {
	e := testEtcd(t)
	dir := t.TempDir()
	n := startNode(t, e, "s1", dir)
	c := &client{t: t, base: n.URL()}

	createTable(c, "metrics")
	var tr struct {
		Config     map[string]any   `json:"config"`
		Partitions []map[string]any `json:"partitions"`
	}
	c.must(200, c.do("GET", "/api/v1/tables/metrics", nil), &tr)
	if len(tr.Partitions) != 1 || tr.Partitions[0]["begin"] != nil || tr.Partitions[0]["end"] != nil {
		t.Fatalf("a new table has one partition covering the whole axis, got %+v", tr.Partitions)
	}

	// JSON array: RFC 3339 and integer times, all field kinds, tags unsorted.
	c.must(200, c.do("POST", "/api/v1/tables/metrics/insert", []byte(`[
		{"time":"2026-01-01T00:00:00Z","series":"cpu,region=eu,host=a","fields":{"usage":1.5,"n":1,"ok":true,"note":"x"}},
		{"time":`+fmt.Sprint(t0+int64(time.Second))+`,"series":"cpu,host=a,region=eu","fields":{"usage":2.5,"n":2}}
	]`), "Content-Type", "application/json"), nil)
	// NDJSON, gzip-compressed.
	nd := fmt.Sprintf("{\"time\":%d,\"series\":\"cpu,host=b\",\"fields\":{\"usage\":10}}\n\n{\"time\":%d,\"series\":\"cpu,host=b\",\"fields\":{\"usage\":20}}\n",
		t0, t0+int64(time.Second))
	c.must(200, c.do("POST", "/api/v1/tables/metrics/insert", gz(t, []byte(nd)),
		"Content-Type", "application/x-ndjson", "Content-Encoding", "gzip"), nil)
	// Line protocol, zstd-compressed, precision s.
	lp := fmt.Sprintf("mem,host=a used=100i,free=3.5 %d\nmem,host=a used=200i %d\n", t0/1e9, t0/1e9+60)
	r := c.do("POST", "/write?db=metrics&precision=s", zst(t, []byte(lp)), "Content-Encoding", "zstd")
	if r.status != 204 {
		t.Fatalf("line protocol write: %d %s", r.status, r.body)
	}

	check := func(c *client) {
		t.Helper()
		all := queryRaw(c, "metrics", "")
		if len(all.Rows) != 6 || all.Truncated {
			t.Fatalf("want 6 rows, got %d: %+v", len(all.Rows), all)
		}
		// Sorted by (time, series).
		for i := 1; i < len(all.Rows); i++ {
			a, b := all.Rows[i-1], all.Rows[i]
			if a.Time > b.Time || (a.Time == b.Time && a.Series >= b.Series) {
				t.Fatalf("rows out of order at %d: %+v then %+v", i, a, b)
			}
		}
		first := all.Rows[0]
		if first.Series != "cpu,host=a,region=eu" || first.Time != t0 {
			t.Fatalf("first row %+v", first)
		}
		want := map[string]any{"usage": 1.5, "n": float64(1), "ok": true, "note": "x"}
		if !reflect.DeepEqual(first.Fields, want) {
			t.Fatalf("fields %v, want %v", first.Fields, want)
		}
		// One series, exact (tags in any order), and a prefix.
		one := queryRaw(c, "metrics", "series="+url.QueryEscape("cpu,region=eu,host=a"))
		if len(one.Rows) != 2 {
			t.Fatalf("exact series: %+v", one)
		}
		if got := queryRaw(c, "metrics", "series=mem*"); len(got.Rows) != 2 {
			t.Fatalf("prefix: %+v", got)
		}
		// Time range [from, to) and a field projection.
		rng := queryRaw(c, "metrics", fmt.Sprintf("from=%d&to=%d&fields=usage", t0, t0+int64(time.Second)))
		if len(rng.Rows) != 2 {
			t.Fatalf("range: %+v", rng)
		}
		for _, row := range rng.Rows {
			if len(row.Fields) != 1 || row.Fields["usage"] == nil {
				t.Fatalf("projection: %+v", row)
			}
		}
		// Limit and truncated.
		if lim := queryRaw(c, "metrics", "limit=4"); len(lim.Rows) != 4 || !lim.Truncated {
			t.Fatalf("limit: %+v", lim)
		}
		// Aggregates per series, step 1s.
		agg := queryAgg(c, "metrics", fmt.Sprintf("series=cpu*&fields=usage&agg=sum&step=1s&from=%d&to=%d", t0, t0+int64(2*time.Second)))
		got := map[string][]float64{}
		for _, s := range agg.Series {
			for _, b := range s.Buckets {
				got[s.Series] = append(got[s.Series], b.Values["usage"])
			}
		}
		wantAgg := map[string][]float64{"cpu,host=a,region=eu": {1.5, 2.5}, "cpu,host=b": {10, 20}}
		if !reflect.DeepEqual(got, wantAgg) {
			t.Fatalf("sum per series per step: %v, want %v", got, wantAgg)
		}
		// group=none, one bucket: avg over all cpu rows.
		avg := queryAgg(c, "metrics", "series=cpu*&fields=usage&agg=avg&group=none")
		if len(avg.Series) != 1 || avg.Series[0].Series != "*" || len(avg.Series[0].Buckets) != 1 ||
			avg.Series[0].Buckets[0].Values["usage"] != (1.5+2.5+10+20)/4 {
			t.Fatalf("avg group=none: %+v", avg)
		}
		for agg, want := range map[string]float64{"count": 4, "min": 1.5, "max": 20, "first": 1.5, "last": 20} {
			res := queryAgg(c, "metrics", "series=cpu*&fields=usage&group=none&agg="+agg)
			if v := res.Series[0].Buckets[0].Values["usage"]; v != want {
				t.Errorf("%s = %v, want %v", agg, v, want)
			}
		}
		// stddev (sample) of 1.5, 2.5, 10, 20: the only aggregate that
		// asks the replicas for the variance (model.Query.NoVariance).
		sd := queryAgg(c, "metrics", "series=cpu*&fields=usage&group=none&agg=stddev")
		if v, want := sd.Series[0].Buckets[0].Values["usage"], math.Sqrt(219.5/3); math.Abs(v-want) > 1e-9*want {
			t.Errorf("stddev = %v, want %v", v, want)
		}
	}
	check(c)

	// Restart on the same data dir: the same answers.
	stopNode(t, n)
	n2 := startNode(t, e, "s1", dir)
	check(&client{t: t, base: n2.URL()})

	// Sealed into column blocks (a server sealing every ended bucket that
	// took no write for 1 ms): the same answers.
	stopNode(t, n2)
	n2 = startNode(t, e, "s1", dir, func(c *Config) { c.SealInterval, c.SealQuiet = 20*time.Millisecond, time.Millisecond })
	c2 := &client{t: t, base: n2.URL()}
	waitFor(t, "6 rows sealed", func() bool {
		r := c2.do("GET", "/metrics", nil)
		for _, line := range strings.Split(string(r.body), "\n") {
			if v, ok := strings.CutPrefix(line, "tsdb_seal_rows_total "); ok {
				n, _ := strconv.ParseFloat(v, 64)
				return n >= 6
			}
		}
		return false
	})
	check(c2)

	// Writes after the restart still land (the sequence resumes), also into
	// a sealed bucket.
	r = c2.do("POST", "/write?db=metrics", []byte(fmt.Sprintf("late v=1 %d\n", t0)))
	if r.status != 204 {
		t.Fatalf("write after restart: %d %s", r.status, r.body)
	}
	if got := queryRaw(c2, "metrics", "series=late"); len(got.Rows) != 1 {
		t.Fatalf("row after restart: %+v", got)
	}
}

// TestLastWriterWins checks the merge rule through the API: a later write of
// one field keeps the row's other fields.
func TestLastWriterWins(t *testing.T) {
	e := testEtcd(t)
	n := startNode(t, e, "s1", t.TempDir())
	c := &client{t: t, base: n.URL()}
	createTable(c, "lww")
	for _, body := range []string{"m,h=a x=1,y=1 100\n", "m,h=a y=2 100\n", "m,h=a z=3 100\n", "m,h=a x=1,y=1 100\n"} {
		if r := c.do("POST", "/write?db=lww", []byte(body)); r.status != 204 {
			t.Fatalf("%d %s", r.status, r.body)
		}
	}
	got := queryRaw(c, "lww", "")
	want := map[string]any{"x": float64(1), "y": float64(1), "z": float64(3)}
	if len(got.Rows) != 1 || !reflect.DeepEqual(got.Rows[0].Fields, want) {
		t.Fatalf("got %+v, want one row with %v (the last write of x,y wins)", got.Rows, want)
	}
}

// TestTableConfigInEtcd reads the TableConfig straight from etcd and checks
// it is the JSON the README documents.
func TestTableConfigInEtcd(t *testing.T) {
	e := testEtcd(t)
	n := startNode(t, e, "s1", t.TempDir())
	c := &client{t: t, base: n.URL()}
	c.must(201, c.do("POST", "/api/v1/tables", []byte(`{"name":"weather","retention":"720h","partition_size_target":1048576,
		"smear":{"enabled":false,"max_delay":"30s"}}`)), nil)

	cli, err := e.Client()
	if err != nil {
		t.Fatal(err)
	}
	defer cli.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	resp, err := cli.Get(ctx, "/tsdb/tables/weather")
	if err != nil || len(resp.Kvs) != 1 {
		t.Fatalf("get: %v %v", err, resp)
	}
	var doc map[string]any
	if err := json.Unmarshal(resp.Kvs[0].Value, &doc); err != nil {
		t.Fatalf("TableConfig is not JSON: %v: %s", err, resp.Kvs[0].Value)
	}
	// The stored JSON has exactly the shape of the README's example: the same
	// keys at every level and the same JSON types.
	readme := readmeTableConfig(t)
	if diff := shapeDiff("", readme, doc); diff != "" {
		t.Fatalf("TableConfig in etcd differs from the README's example: %s\nstored: %s", diff, resp.Kvs[0].Value)
	}
	if doc["name"] != "weather" || doc["metadata_txnseq"] != float64(1) || doc["replication_factor"] != float64(1) ||
		doc["partition_size_target"] != float64(1<<20) || doc["retention"] != "720h0m0s" {
		t.Fatalf("values: %s", resp.Kvs[0].Value)
	}
	if id, _ := doc["metadata_txnid"].(string); len(id) != 40 {
		t.Fatalf("metadata_txnid %q: want 40 hex digits", id)
	}
	if s, _ := doc["metadata_servers"].([]any); len(s) != 1 || s[0] != "s1" {
		t.Fatalf("metadata_servers %v", doc["metadata_servers"])
	}
	smear, _ := doc["smear"].(map[string]any)
	if smear["enabled"] != false || smear["max_delay"] != "30s" || smear["keyrange_threshold"] != "1m0s" {
		t.Fatalf("smear %v", smear)
	}
	if _, err := time.Parse(time.RFC3339Nano, fmt.Sprint(doc["created_at"])); err != nil {
		t.Fatalf("created_at: %v", err)
	}
}

// TestAuthToken checks that a configured bearer token guards every endpoint
// but /healthz and /metrics.
func TestAuthToken(t *testing.T) {
	e := testEtcd(t)
	n := startNode(t, e, "s1", t.TempDir(), func(c *Config) { c.AuthToken, c.ClusterSecret = "s3cret", "cluster-s3cret" })
	anon := &client{t: t, base: n.URL()}
	bad := &client{t: t, base: n.URL(), token: "wrong"}
	good := &client{t: t, base: n.URL(), token: "s3cret"}
	for _, p := range []struct{ method, path, body string }{
		{"GET", "/api/v1/tables", ""},
		{"POST", "/api/v1/tables", `{"name":"x"}`},
		{"GET", "/api/v1/tables/x", ""},
		{"POST", "/api/v1/tables/x/insert", `[]`},
		{"GET", "/api/v1/tables/x/query", ""},
		{"POST", "/write?db=x", "m v=1"},
		{"GET", "/api/v1/cluster", ""},
	} {
		for _, c := range []*client{anon, bad} {
			r := c.do(p.method, p.path, []byte(p.body))
			if code, _ := errorOf(t, r); r.status != 401 || code != api.CodeUnauthorized {
				t.Errorf("%s %s with token %q: %d %s, want 401", p.method, p.path, c.token, r.status, r.body)
			}
		}
	}
	if r := anon.do("GET", "/healthz", nil); r.status != 200 {
		t.Errorf("healthz: %d", r.status)
	}
	if r := anon.do("GET", "/metrics", nil); r.status != 200 {
		t.Errorf("metrics: %d", r.status)
	}
	createTable(good, "x")
	if r := good.do("POST", "/write?db=x", []byte("m v=1")); r.status != 204 {
		t.Errorf("write with token: %d %s", r.status, r.body)
	}
}

// TestMetrics checks the Prometheus endpoint exports insert, query and pebble
// figures.
func TestMetrics(t *testing.T) {
	e := testEtcd(t)
	n := startNode(t, e, "s1", t.TempDir())
	c := &client{t: t, base: n.URL()}
	createTable(c, "m")
	c.do("POST", "/write?db=m", []byte("a v=1 1\na v=2 2\n"))
	queryRaw(c, "m", "")
	r := c.do("GET", "/metrics", nil)
	for _, want := range []string{
		`tsdb_insert_rows_total{format="line_protocol"} 2`,
		`tsdb_query_rows_total 2`,
		`tsdb_http_request_duration_seconds_bucket{route="write"`,
		`tsdb_http_requests_total{code="204",route="write"} 1`,
		`tsdb_pebble_disk_usage_bytes`,
		`tsdb_partition_replicas 1`,
	} {
		if !strings.Contains(string(r.body), want) {
			t.Errorf("/metrics lacks %q", want)
		}
	}
}

// readmeTableConfig extracts the TableConfig example from README.md (the
// first ```json block after "Inspecting a table in etcd").
func readmeTableConfig(t *testing.T) map[string]any {
	t.Helper()
	b, err := os.ReadFile("../README.md")
	if err != nil {
		t.Fatal(err)
	}
	s := string(b)
	i := strings.Index(s, "Inspecting a table in etcd")
	if i < 0 {
		t.Fatal("README.md has no section \"Inspecting a table in etcd\"")
	}
	s = s[i:]
	j := strings.Index(s, "```json\n")
	if j < 0 {
		t.Fatal("README.md shows no JSON TableConfig")
	}
	s = s[j+len("```json\n"):]
	s = s[:strings.Index(s, "```")]
	var doc map[string]any
	if err := json.Unmarshal([]byte(s), &doc); err != nil {
		t.Fatalf("README's TableConfig example is not JSON: %v", err)
	}
	return doc
}

// shapeDiff compares two decoded JSON documents by keys and value types,
// recursing into objects; it returns "" when they have the same shape.
func shapeDiff(path string, want, got any) string {
	if reflect.TypeOf(want) != reflect.TypeOf(got) {
		return fmt.Sprintf("%s: README has %T, stored %T", path, want, got)
	}
	wm, ok := want.(map[string]any)
	if !ok {
		return ""
	}
	gm := got.(map[string]any)
	for k := range wm {
		if _, ok := gm[k]; !ok {
			return fmt.Sprintf("%s.%s: in the README, not stored", path, k)
		}
	}
	for k := range gm {
		if _, ok := wm[k]; !ok {
			return fmt.Sprintf("%s.%s: stored, not in the README", path, k)
		}
		if d := shapeDiff(path+"."+k, wm[k], gm[k]); d != "" {
			return d
		}
	}
	return ""
}

// TestStartsWithOneBadTable deletes one table's METADATA file while the
// server is down: the server still starts, serves the other table, and
// answers the broken one with 503 instead of failing to start.
func TestStartsWithOneBadTable(t *testing.T) {
	e := testEtcd(t)
	dir := t.TempDir()
	n := startNode(t, e, "s1", dir)
	c := &client{t: t, base: n.URL()}
	createTable(c, "good")
	createTable(c, "bad")
	c.must(204, c.do("POST", "/write?db=good", []byte("m v=1 1\n")), nil)
	stopNode(t, n)
	if err := os.RemoveAll(filepath.Join(dir, "metadata", "bad")); err != nil {
		t.Fatal(err)
	}
	n2 := startNode(t, e, "s1", dir)
	c2 := &client{t: t, base: n2.URL()}
	if got := queryRaw(c2, "good", ""); len(got.Rows) != 1 {
		t.Fatalf("good table: %+v", got)
	}
	r := c2.do("GET", "/api/v1/tables/bad/query", nil)
	if r.status != 503 || !strings.Contains(string(r.body), "bad") {
		t.Fatalf("bad table: %d %s, want 503 naming it", r.status, r.body)
	}
	var cl api.ClusterResponse
	c2.must(200, c2.do("GET", "/api/v1/cluster", nil), &cl)
	if len(cl.Servers) != 1 || cl.Servers[0].ID != "s1" || cl.Servers[0].Replicas != 2 {
		t.Fatalf("cluster: %+v", cl)
	}
}
