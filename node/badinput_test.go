package node

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"
)

// TestBadInput sends every kind of bad input of issue 2 and checks each gets
// its 4xx status, a JSON error whose message names the problem, and that
// nothing was stored.
func TestBadInput(t *testing.T) {
	e := testEtcd(t)
	const limit = 256 << 10
	n := startNode(t, e, "s1", t.TempDir(), func(c *Config) { c.MaxBodyBytes = limit })
	c := &client{t: t, base: n.URL()}
	createTable(c, "t")
	// One good row, so "nothing stored" means the count stays 1.
	c.must(204, c.do("POST", "/write?db=t", []byte("ok v=1 1\n")), nil)

	long := strings.Repeat("x", 1025)
	var manyFields strings.Builder
	for i := 0; i < 1025; i++ {
		if i > 0 {
			manyFields.WriteByte(',')
		}
		fmt.Fprintf(&manyFields, `"f%d":1`, i)
	}
	big := bytes.Repeat([]byte("m v=1 1\n"), limit/8+10)
	bomb := gz(t, bytes.Repeat([]byte("m v=1 1\n"), 2*limit/8))
	const ins = "/api/v1/tables/t/insert"
	jsonCT := []string{"Content-Type", "application/json"}
	ndCT := []string{"Content-Type", "application/x-ndjson"}

	cases := []struct {
		name    string
		method  string
		path    string
		body    []byte
		headers []string
		status  int
		want    string // substring of the error message
	}{
		{"unknown table insert", "POST", "/api/v1/tables/nope/insert", []byte(`[]`), jsonCT, 404, "nope"},
		{"unknown table write", "POST", "/write?db=nope", []byte("m v=1"), nil, 404, "nope"},
		{"unknown table query", "GET", "/api/v1/tables/nope/query", nil, nil, 404, "nope"},
		{"unknown table get", "GET", "/api/v1/tables/nope", nil, nil, 404, "nope"},
		{"invalid table name create", "POST", "/api/v1/tables", []byte(`{"name":"Bad-Name"}`), nil, 400, "Bad-Name"},
		{"invalid table name write", "POST", "/write?db=9lives", []byte("m v=1"), nil, 400, "9lives"},
		{"missing db", "POST", "/write", []byte("m v=1"), nil, 400, "db"},
		{"table exists", "POST", "/api/v1/tables", []byte(`{"name":"t"}`), nil, 409, "t"},
		{"unknown create field", "POST", "/api/v1/tables", []byte(`{"name":"u","replicas":3}`), nil, 400, "replicas"},
		{"too many replicas", "POST", "/api/v1/tables", []byte(`{"name":"u","replication_factor":3}`), nil, 400, "replication_factor"},
		{"malformed json", "POST", ins, []byte(`[{"time":1,"series":"m","fields":{"v":1}},{"time":`), jsonCT, 400, "row 2"},
		{"malformed ndjson line 3", "POST", ins, []byte("{\"time\":1,\"series\":\"m\",\"fields\":{\"v\":1}}\n{\"time\":2,\"series\":\"m\",\"fields\":{\"v\":1}}\n{\"time\":3,\n"), ndCT, 400, "line 3"},
		{"malformed line protocol line 2", "POST", "/write?db=t", []byte("m v=1 1\nm v= 2\nm v=3 3\n"), nil, 400, "line 2"},
		{"missing time", "POST", ins, []byte(`[{"series":"m","fields":{"v":1}}]`), jsonCT, 400, "time"},
		{"unparsable time", "POST", ins, []byte(`[{"time":"yesterday","series":"m","fields":{"v":1}}]`), jsonCT, 400, "time"},
		{"time outside int64 ns", "POST", ins, []byte(`[{"time":"2500-01-01T00:00:00Z","series":"m","fields":{"v":1}}]`), jsonCT, 400, "time"},
		{"time outside int64 ns lp", "POST", "/write?db=t&precision=s", []byte("m v=1 9999999999999\n"), nil, 400, "line 1"},
		{"empty series", "POST", ins, []byte(`[{"time":1,"series":"","fields":{"v":1}}]`), jsonCT, 400, "series"},
		{"series over 1 KiB", "POST", ins, []byte(`[{"time":1,"series":"` + long + `","fields":{"v":1}}]`), jsonCT, 400, "series"},
		{"too many fields", "POST", ins, []byte(`[{"time":1,"series":"m","fields":{` + manyFields.String() + `}}]`), jsonCT, 400, "fields"},
		{"unsupported field type", "POST", ins, []byte(`[{"time":1,"series":"m","fields":{"v":{"a":1}}}]`), jsonCT, 400, "v"},
		{"null field", "POST", ins, []byte(`[{"time":1,"series":"m","fields":{"v":null}}]`), jsonCT, 400, "v"},
		{"one bad row rejects the batch", "POST", ins, []byte(`[{"time":5,"series":"m","fields":{"v":1}},{"time":6,"series":"m","fields":{"v":[1]}}]`), jsonCT, 400, "row 2"},
		{"one bad line rejects the batch", "POST", "/write?db=t", []byte("m v=1 5\nm v=2 6\nm,=x v=3 7\n"), nil, 400, "line 3"},
		{"body over the limit", "POST", "/write?db=t", big, []string{"Expect", "100-continue"}, 413, "limit"},
		{"decompressed body over the limit", "POST", "/write?db=t", bomb, []string{"Content-Encoding", "gzip"}, 413, "exceeds"},
		{"unsupported content-encoding", "POST", "/write?db=t", []byte("m v=1"), []string{"Content-Encoding", "br"}, 415, "br"},
		{"unsupported content-type", "POST", ins, []byte("m v=1"), []string{"Content-Type", "text/csv"}, 415, "text/csv"},
		{"corrupt gzip", "POST", "/write?db=t", []byte("\x1f\x8b\x08\x00garbage"), []string{"Content-Encoding", "gzip"}, 400, "gzip"},
		{"corrupt zstd", "POST", "/write?db=t", []byte("\x28\xb5\x2f\xfdgarbage"), []string{"Content-Encoding", "zstd"}, 400, "zstd"},
		{"query from > to", "GET", "/api/v1/tables/t/query?from=10&to=5", nil, nil, 400, "from"},
		{"query unknown agg", "GET", "/api/v1/tables/t/query?agg=median", nil, nil, 400, "median"},
		{"query step zero", "GET", "/api/v1/tables/t/query?agg=sum&step=0&from=0&to=10", nil, nil, 400, "step"},
		{"query step negative", "GET", "/api/v1/tables/t/query?agg=sum&step=-1s&from=0&to=10", nil, nil, 400, "step"},
		{"query too many buckets", "GET", "/api/v1/tables/t/query?agg=sum&step=1ns&from=0&to=1000001", nil, nil, 422, "--max-query-buckets"},
		{"query bad limit", "GET", "/api/v1/tables/t/query?limit=0", nil, nil, 400, "limit"},
		{"query bad time", "GET", "/api/v1/tables/t/query?from=noon", nil, nil, 400, "from"},
		{"unknown endpoint", "GET", "/api/v1/nothing", nil, nil, 404, "nothing"},
		{"wrong method", "DELETE", "/api/v1/tables/t/insert", nil, nil, 405, "DELETE"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			r := (&client{t: t, base: n.URL()}).do(tc.method, tc.path, tc.body, tc.headers...)
			if r.status != tc.status {
				t.Fatalf("status %d, want %d: %s", r.status, tc.status, r.body)
			}
			code, msg := errorOf(t, r)
			if code == "" || !strings.Contains(msg, tc.want) {
				t.Fatalf("error %s %q does not name %q", code, msg, tc.want)
			}
		})
	}
	// Without Expect, the server answers 413 as soon as it reads the
	// Content-Length and closes; a client still sending may see the reset
	// first, which is as good a refusal. Either way nothing is stored.
	t.Run("body over the limit without expect", func(t *testing.T) {
		req, err := http.NewRequest("POST", n.URL()+"/write?db=t", bytes.NewReader(big))
		if err != nil {
			t.Fatal(err)
		}
		resp, err := http.DefaultClient.Do(req)
		if err == nil {
			defer resp.Body.Close()
			if resp.StatusCode != 413 {
				t.Fatalf("status %d, want 413", resp.StatusCode)
			}
		} else if !strings.Contains(err.Error(), "reset") && !strings.Contains(err.Error(), "broken pipe") {
			t.Fatalf("want 413 or a reset connection, got %v", err)
		}
	})
	// Nothing of the rejected batches was stored.
	if got := queryRaw(c, "t", ""); len(got.Rows) != 1 || got.Rows[0].Series != "ok" {
		t.Fatalf("bad input stored rows: %+v", got.Rows)
	}
	// The server is still healthy.
	c.must(200, c.do("GET", "/healthz", nil), nil)
}

// errorOf returns the tsdb code and the message of an error answer:
// tsdb's {"error":{"code","message"}}, or InfluxDB's {"error":"..."} or
// {"code","message"} on the InfluxDB routes (/write, /api/v2/write), whose
// tsdb code is in the X-Tsdb-Error-Code header.
func errorOf(t *testing.T, r response) (code, msg string) {
	t.Helper()
	var tsdb struct {
		Error struct{ Code, Message string } `json:"error"`
	}
	if json.Unmarshal(r.body, &tsdb) == nil && tsdb.Error.Code != "" {
		return tsdb.Error.Code, tsdb.Error.Message
	}
	var v1 struct{ Error string }
	if json.Unmarshal(r.body, &v1) == nil && v1.Error != "" {
		return r.header.Get("X-Tsdb-Error-Code"), v1.Error
	}
	var v2 struct{ Code, Message string }
	if json.Unmarshal(r.body, &v2) == nil && v2.Code != "" {
		return r.header.Get("X-Tsdb-Error-Code"), v2.Message
	}
	t.Fatalf("answer %d %s is not an error body", r.status, r.body)
	return "", ""
}
