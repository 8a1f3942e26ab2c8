package http

import (
	"bytes"
	"compress/gzip"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/valyala/fasthttp"

	"github.com/tsdb/tsdb/cluster/rpc"
	"github.com/tsdb/tsdb/cluster/wire"
	"github.com/tsdb/tsdb/http/api"
	"github.com/tsdb/tsdb/http/ingest"
	"github.com/tsdb/tsdb/metadata"
	"github.com/tsdb/tsdb/model"
)

// influxBackend serves one table ("metrics") for writes and the table
// list and records the rows written; every other Backend method panics.
type influxBackend struct {
	panicky
	mu   sync.Mutex
	rows []model.Row
}

func (b *influxBackend) Table(_ context.Context, name string) (metadata.TableConfig, *metadata.File, error) {
	if name != "metrics" {
		return metadata.TableConfig{}, nil, fmt.Errorf("%w: %s", metadata.ErrTableNotFound, name)
	}
	return metadata.TableConfig{Name: name}, &metadata.File{Table: name}, nil
}

func (b *influxBackend) ListTables(context.Context) ([]metadata.TableConfig, error) {
	return []metadata.TableConfig{{Name: "metrics"}}, nil
}

func (b *influxBackend) Insert(_ context.Context, _ string, rows []model.Row, _ model.InsertOptions) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	for _, r := range rows {
		b.rows = append(b.rows, model.Row{Time: r.Time, Series: strings.Clone(r.Series)})
	}
	return nil
}

func (b *influxBackend) written() []model.Row {
	b.mu.Lock()
	defer b.mu.Unlock()
	rows := b.rows
	b.rows = nil
	return rows
}

// influxAnswer is an answer with its headers.
type influxAnswer struct {
	status int
	header http.Header
	body   string
}

func influxDo(t *testing.T, method, url string, headers map[string]string, body string) influxAnswer {
	t.Helper()
	var rd io.Reader
	if body != "" {
		rd = strings.NewReader(body)
	}
	req, err := http.NewRequest(method, url, rd)
	if err != nil {
		t.Fatal(err)
	}
	for k, v := range headers {
		req.Header.Set(k, v)
	}
	resp, err := (&http.Client{Timeout: 10 * time.Second}).Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return influxAnswer{status: resp.StatusCode, header: resp.Header, body: string(b)}
}

func basic(user, pass string) string {
	return "Basic " + base64.StdEncoding.EncodeToString([]byte(user+":"+pass))
}

// The three routes the authentication table runs on, one per error shape.
const (
	routeV1   = "/write?db=metrics"
	routeV2   = "/api/v2/write?bucket=metrics"
	routeTSDB = "/api/v1/tables"
)

// TestInfluxAuthSchemes: with a token configured, each of InfluxDB's ways
// to send it is accepted (Token, Bearer, basic with any user, u/p on the
// 1.x routes only) and anything else is a 401 in the route's shape.
func TestInfluxAuthSchemes(t *testing.T) {
	const tok = "s3cr:et"
	be := &influxBackend{}
	base := "http://" + startServer(t, NewServer(Config{AuthToken: tok}, be))
	all := []string{routeV1, routeV2, routeTSDB}
	for _, tc := range []struct {
		name     string
		auth     string // Authorization header; "" for none
		query    string // appended to the route's query
		accepted []string
	}{
		{"bearer", "Bearer " + tok, "", all},
		{"bearer any case, spaces", "bEARER   " + tok + " ", "", all},
		{"token", "Token " + tok, "", all},
		{"token user:T (1.8)", "Token someone:" + tok, "", all},
		{"basic any user", basic("grafana", tok), "", all},
		{"basic empty user", basic("", tok), "", all},
		{"u and p", "", "&u=telegraf&p=" + tok, []string{routeV1}},
		{"p alone", "", "&p=" + tok, []string{routeV1}},
		{"no credentials", "", "", nil},
		{"wrong bearer", "Bearer nope", "", nil},
		{"token prefix", "Bearer s3cr", "", nil},
		{"token longer", "Token " + tok + "x", "", nil},
		{"empty token", "Token ", "", nil},
		{"token as basic user", basic(tok, "x"), "", nil},
		{"basic without colon", "Basic " + base64.StdEncoding.EncodeToString([]byte(tok)), "", nil},
		{"basic not base64", "Basic !!!" + tok, "", nil},
		{"unknown scheme", "Digest " + tok, "", nil},
		{"scheme alone", tok, "", nil},
		{"wrong p", "", "&u=a&p=nope", nil},
		{"empty p", "", "&u=a&p=", nil},
		{"u alone holding the token", "", "&u=" + tok, nil},
		{"a wrong header wins over a right p", "Bearer nope", "&p=" + tok, nil},
	} {
		for _, route := range all {
			accepted := false
			for _, a := range tc.accepted {
				accepted = accepted || a == route
			}
			method, body := "POST", "cpu v=1 1\n"
			if route == routeTSDB {
				method, body = "GET", ""
			}
			url := base + route
			if tc.query != "" {
				sep := "&"
				if !strings.Contains(route, "?") {
					sep = "?"
				}
				url += sep + tc.query[1:]
			}
			h := map[string]string{}
			if tc.auth != "" {
				h["Authorization"] = tc.auth
			}
			r := influxDo(t, method, url, h, body)
			if accepted {
				if r.status != 204 && r.status != 200 {
					t.Errorf("%s on %s: %d %s, want accepted", tc.name, route, r.status, r.body)
				}
				continue
			}
			if r.status != 401 {
				t.Errorf("%s on %s: %d %s, want 401", tc.name, route, r.status, r.body)
				continue
			}
			if got := r.header.Values("WWW-Authenticate"); len(got) != 2 {
				t.Errorf("%s on %s: WWW-Authenticate %q, want the Bearer and Basic challenges", tc.name, route, got)
			}
			checkErrorShape(t, tc.name, route, r, 401)
			wantMsg := "authorization failed"
			if tc.auth == "" && !strings.Contains(tc.query, "p=") || tc.auth == "" && route != routeV1 {
				wantMsg = "missing credentials"
			}
			if !strings.Contains(r.body, wantMsg) {
				t.Errorf("%s on %s: %s, want a message saying %q", tc.name, route, r.body, wantMsg)
			}
		}
	}
}

// TestQueryRouteAuth: /query (served by the InfluxQL handler) takes the
// same credentials as /write, u/p included, and its 401 is in InfluxDB
// 1.x's shape; what it answers once authorized is the handler's.
func TestQueryRouteAuth(t *testing.T) {
	base := "http://" + startServer(t, NewServer(Config{AuthToken: "tok"}, &influxBackend{}))
	for _, tc := range []struct {
		query string
		auth  string
		ok    bool
	}{
		{"?q=SHOW+DATABASES&u=a&p=tok", "", true},
		{"?q=SHOW+DATABASES", "Token tok", true},
		{"?q=SHOW+DATABASES", basic("grafana", "tok"), true},
		{"?q=SHOW+DATABASES&u=a&p=bad", "", false},
		{"?q=SHOW+DATABASES", "", false},
	} {
		h := map[string]string{}
		if tc.auth != "" {
			h["Authorization"] = tc.auth
		}
		r := influxDo(t, "GET", base+"/query"+tc.query, h, "")
		if tc.ok {
			if r.status == 401 {
				t.Errorf("/query%s with %q: 401 %s", tc.query, tc.auth, r.body)
			}
			continue
		}
		checkErrorShape(t, "query", "/query"+tc.query, r, 401)
	}
}

// checkErrorShape checks that r is an error answer of status in the shape
// of route's family: InfluxDB 1.x's, 2.x's or tsdb's.
func checkErrorShape(t *testing.T, name, route string, r influxAnswer, status int) {
	t.Helper()
	if r.status != status {
		t.Errorf("%s on %s: status %d %s, want %d", name, route, r.status, r.body, status)
		return
	}
	var m map[string]json.RawMessage
	if err := json.Unmarshal([]byte(r.body), &m); err != nil {
		t.Errorf("%s on %s: body %q is not a JSON object: %v", name, route, r.body, err)
		return
	}
	path, _, _ := strings.Cut(route, "?")
	switch errorShape(path) {
	case shapeInfluxV1:
		var msg string
		if len(m) != 1 || json.Unmarshal(m["error"], &msg) != nil || msg == "" {
			t.Errorf(`%s on %s: %s, want {"error":"message"}`, name, route, r.body)
		}
		if r.header.Get("X-Influxdb-Error") != msg {
			t.Errorf("%s on %s: X-Influxdb-Error %q, want the message", name, route, r.header.Get("X-Influxdb-Error"))
		}
	case shapeInfluxV2:
		var code, msg string
		if len(m) != 2 || json.Unmarshal(m["code"], &code) != nil || json.Unmarshal(m["message"], &msg) != nil ||
			code != influxV2Code(status) || msg == "" {
			t.Errorf(`%s on %s: %s, want {"code":%q,"message":"..."}`, name, route, r.body, influxV2Code(status))
		}
		if r.header.Get("X-Platform-Error-Code") != code {
			t.Errorf("%s on %s: X-Platform-Error-Code %q, want %q", name, route, r.header.Get("X-Platform-Error-Code"), code)
		}
	default:
		var eb api.ErrorResponse
		if err := json.Unmarshal([]byte(r.body), &eb); err != nil || eb.Error.Code == "" || eb.Error.Message == "" {
			t.Errorf(`%s on %s: %s, want {"error":{"code","message"}}`, name, route, r.body)
		}
		return
	}
	if r.header.Get(headerTSDBErrorCode) == "" {
		t.Errorf("%s on %s: no %s header", name, route, headerTSDBErrorCode)
	}
}

// TestInfluxSchemesDoNotOpenInternal: none of the public API's schemes,
// even with the right token, opens the internal API, whose only
// credential is the cluster secret; with a token and no secret it stays
// closed to everyone.
func TestInfluxSchemesDoNotOpenInternal(t *testing.T) {
	const tok = "tok"
	for _, secret := range []string{"sec", ""} {
		fake := &fakeInternal{}
		base := "http://" + startServer(t, NewServer(Config{AuthToken: tok, ClusterSecret: secret, Internal: fake}, panicky{}))
		body := string(mustJSON(t, wire.JoinMetadataRequest{Table: "m"}))
		for _, tc := range []struct {
			name    string
			headers map[string]string
			query   string
		}{
			{"bearer", map[string]string{"Authorization": "Bearer " + tok}, ""},
			{"token", map[string]string{"Authorization": "Token " + tok}, ""},
			{"basic", map[string]string{"Authorization": basic("u", tok)}, ""},
			{"u/p", nil, "?u=u&p=" + tok},
			{"token as the secret header's neighbour", map[string]string{"Authorization": "Token " + tok, rpc.SecretHeader: "wrong"}, ""},
		} {
			r := influxDo(t, "POST", base+wire.PathMetadataJoin+tc.query, tc.headers, body)
			if r.status != 401 {
				t.Errorf("secret %q, %s: internal call answered %d %s, want 401", secret, tc.name, r.status, r.body)
			}
		}
		if n := len(fake.requests()); n != 0 {
			t.Errorf("secret %q: the internal backend was called %d times", secret, n)
		}
	}
}

// TestPingAndHealth: /ping and /health answer as InfluxDB's, without
// credentials on a protected server, with InfluxDB's version headers;
// /health fails (503) once Shutdown has begun.
func TestPingAndHealth(t *testing.T) {
	s := NewServer(Config{AuthToken: "tok", Version: "0.9.1", Commit: "abc123"}, panicky{})
	base := "http://" + startServer(t, s)
	const wantVersion = "1.8.10-tsdb-0.9.1"
	checkHeaders := func(what string, r influxAnswer) {
		t.Helper()
		if r.header.Get("X-Influxdb-Version") != wantVersion || r.header.Get("X-Influxdb-Build") != "OSS" ||
			r.header.Get("X-Tsdb-Version") != "0.9.1" {
			t.Errorf("%s: headers %v, want X-Influxdb-Version %s, X-Influxdb-Build OSS, X-Tsdb-Version 0.9.1", what, r.header, wantVersion)
		}
	}
	for _, tc := range []struct {
		method, path string
		status       int
		body         string
	}{
		{"GET", "/ping", 204, ""},
		{"HEAD", "/ping", 204, ""},
		{"GET", "/ping?verbose=false", 204, ""},
		{"GET", "/ping?verbose=0", 204, ""},
		{"GET", "/ping?wait_for_leader=5s", 204, ""},
		{"GET", "/ping?verbose=true", 200, `{"version":"` + wantVersion + `"}`},
		{"GET", "/ping?verbose=1", 200, `{"version":"` + wantVersion + `"}`},
		{"HEAD", "/health", 200, ""},
		{"GET", "/health", 200, `{"name":"tsdb","message":"ready for queries and writes","status":"pass","checks":[],"version":"` +
			wantVersion + `","commit":"abc123"}`},
	} {
		r := influxDo(t, tc.method, base+tc.path, nil, "")
		if r.status != tc.status || r.body != tc.body {
			t.Errorf("%s %s: %d %q, want %d %q", tc.method, tc.path, r.status, r.body, tc.status, tc.body)
		}
		checkHeaders(tc.method+" "+tc.path, r)
	}
	r := influxDo(t, "POST", base+"/ping", nil, "")
	checkErrorShape(t, "POST", "/ping", r, 405)
	checkHeaders("POST /ping", r)
	r = influxDo(t, "DELETE", base+"/health", nil, "")
	checkErrorShape(t, "DELETE", "/health", r, 405)
	// The version headers are on the other InfluxDB routes too, error or
	// not, and not on tsdb's own.
	checkHeaders("/write without credentials", influxDo(t, "POST", base+"/write?db=metrics", nil, "cpu v=1"))
	checkHeaders("/api/v2/write without credentials", influxDo(t, "POST", base+"/api/v2/write?bucket=metrics", nil, "cpu v=1"))
	if r := influxDo(t, "GET", base+"/api/v1/tables", nil, ""); r.header.Get("X-Influxdb-Version") != "" {
		t.Errorf("/api/v1/tables answers X-Influxdb-Version %q", r.header.Get("X-Influxdb-Version"))
	}

	// A server without a version answers "dev".
	dev := "http://" + startServer(t, NewServer(Config{}, panicky{}))
	if r := influxDo(t, "GET", dev+"/ping", nil, ""); r.header.Get("X-Influxdb-Version") != "1.8.10-tsdb-dev" {
		t.Errorf("no version: X-Influxdb-Version %q, want 1.8.10-tsdb-dev", r.header.Get("X-Influxdb-Version"))
	}

	// Shutdown marks the server stopping: /health then fails. A server
	// that has stopped answers nothing, so the answer is checked on the
	// handler itself.
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := s.Shutdown(ctx); err != nil {
		t.Fatal(err)
	}
	var fctx fasthttp.RequestCtx
	fctx.Request.SetRequestURI("/health")
	s.Handle(&fctx)
	var h influxHealth
	if err := json.Unmarshal(fctx.Response.Body(), &h); err != nil || fctx.Response.StatusCode() != 503 || h.Status != "fail" ||
		h.Name != "tsdb" || h.Version != wantVersion {
		t.Errorf("/health while stopping: %d %s (%v), want 503 status fail", fctx.Response.StatusCode(), fctx.Response.Body(), err)
	}
}

// TestPingNotCapped: /ping and /health answer while every public request
// slot is taken, like /healthz.
func TestPingNotCapped(t *testing.T) {
	for _, p := range []string{"/ping", "/health", "/healthz", "/metrics"} {
		if limited(p) {
			t.Errorf("%s counts against the cap of concurrent requests", p)
		}
	}
	for _, p := range []string{"/write", "/query", "/api/v2/write", "/api/v1/tables"} {
		if !limited(p) {
			t.Errorf("%s does not count against the cap of concurrent requests", p)
		}
	}
}

// TestInfluxErrorShapes: the errors of each route come in its family's
// shape, with InfluxDB's wording where clients read it (Telegraf creates
// the database on "database not found").
func TestInfluxErrorShapes(t *testing.T) {
	be := &influxBackend{}
	base := "http://" + startServer(t, NewServer(Config{MaxBodyBytes: 1024}, be))
	var gz bytes.Buffer
	zw := gzip.NewWriter(&gz)
	zw.Write([]byte(strings.Repeat("cpu v=1 1\n", 200)))
	zw.Close()
	for _, tc := range []struct {
		name, method, route, body string
		headers                   map[string]string
		status                    int
		msg                       string
	}{
		{"no db", "POST", "/write", "cpu v=1", nil, 400, "database is required"},
		{"unknown db", "POST", "/write?db=nope", "cpu v=1", nil, 404, `database not found: "nope"`},
		{"invalid db name", "POST", "/write?db=a%20b", "cpu v=1", nil, 400, ""},
		{"bad line", "POST", "/write?db=metrics", "cpu v=1\ncpu\n", nil, 400, "line 2"},
		{"bad precision", "POST", "/write?db=metrics&precision=x", "cpu v=1", nil, 400, `invalid precision "x" (use n, u, ms, s, m or h)`},
		{"GET write", "GET", "/write?db=metrics", "", nil, 405, "method GET not allowed"},
		{"bad encoding", "POST", "/write?db=metrics", "cpu v=1", map[string]string{"Content-Encoding": "br"}, 415, "br"},
		{"gzip bomb", "POST", "/write?db=metrics", gz.String(), map[string]string{"Content-Encoding": "gzip"}, 413, "exceeds 1024 bytes"},
		{"no query handler yet", "GET", "/nope", "", nil, 404, "no such endpoint"},
		{"v2 no bucket", "POST", "/api/v2/write?org=o", "cpu v=1", nil, 400, "bucket is required"},
		{"v2 empty db in bucket", "POST", "/api/v2/write?bucket=/autogen", "cpu v=1", nil, 400, "names no database"},
		{"v2 unknown bucket", "POST", "/api/v2/write?org=o&bucket=nope", "cpu v=1", nil, 404, `bucket "nope" not found`},
		{"v2 unknown db/rp", "POST", "/api/v2/write?bucket=nope/autogen", "cpu v=1", nil, 404, `bucket "nope" not found`},
		{"v2 bad line", "POST", "/api/v2/write?bucket=metrics", "cpu v=\n", nil, 400, "line 1"},
		{"v2 1.x precision", "POST", "/api/v2/write?bucket=metrics&precision=h", "cpu v=1", nil, 400,
			`invalid precision "h"; valid precision units are ns, us, ms, and s`},
		{"v2 GET", "GET", "/api/v2/write?bucket=metrics", "", nil, 405, "not allowed"},
		{"v2 gzip bomb", "POST", "/api/v2/write?bucket=metrics", gz.String(), map[string]string{"Content-Encoding": "gzip"}, 413, "exceeds"},
		{"v2 bad type", "POST", "/api/v2/write?bucket=metrics", "cpu v=1", map[string]string{"Content-Encoding": "x"}, 415, ""},
		{"tsdb insert unknown table", "POST", "/api/v1/tables/nope/insert", "[]", nil, 404, "table not found"},
		{"tsdb bad insert", "POST", "/api/v1/tables/metrics/insert", "[{", nil, 400, ""},
	} {
		r := influxDo(t, tc.method, base+tc.route, tc.headers, tc.body)
		checkErrorShape(t, tc.name, tc.route, r, tc.status)
		if !strings.Contains(r.body, jsonFragment(tc.msg)) {
			t.Errorf("%s: %s, want a message containing %q", tc.name, r.body, tc.msg)
		}
	}
	if rows := be.written(); len(rows) != 0 {
		t.Errorf("failed writes wrote %d rows", len(rows))
	}
}

// jsonFragment is s as it appears inside a JSON string.
func jsonFragment(s string) string {
	b, _ := json.Marshal(s)
	return string(b[1 : len(b)-1])
}

// TestWriteParams: /write and /api/v2/write read InfluxDB's parameters:
// db or bucket (db/rp) name the table, precision scales the timestamps
// (1.x's units on /write, 2.x's on /api/v2/write), rp, consistency, org
// and orgID are accepted and ignored.
func TestWriteParams(t *testing.T) {
	be := &influxBackend{}
	base := "http://" + startServer(t, NewServer(Config{}, be))
	for _, tc := range []struct {
		route string
		scale int64 // 0: refused with 400
	}{
		{"/write?db=metrics", 1},
		{"/write?db=metrics&precision=n", 1},
		{"/write?db=metrics&precision=ns", 1},
		{"/write?db=metrics&precision=u", 1e3},
		{"/write?db=metrics&precision=ms", 1e6},
		{"/write?db=metrics&precision=s&rp=autogen&consistency=all", 1e9},
		{"/write?db=metrics&precision=m&rp=whatever", 60e9},
		{"/write?db=metrics&precision=h", 3600e9},
		{"/write?db=metrics&precision=x", 0},
		{"/write?db=metrics&precision=S", 0},
		{"/write?db=metrics&precision=d", 0},
		{"/api/v2/write?bucket=metrics", 1},
		{"/api/v2/write?bucket=metrics&org=my-org&precision=ns", 1},
		{"/api/v2/write?bucket=metrics&orgID=0123456789abcdef&precision=us", 1e3},
		{"/api/v2/write?bucket=metrics/autogen&precision=ms", 1e6},
		{"/api/v2/write?bucket=metrics%2Fautogen&precision=s", 1e9},
		{"/api/v2/write?bucket=metrics&precision=n", 0},
		{"/api/v2/write?bucket=metrics&precision=u", 0},
		{"/api/v2/write?bucket=metrics&precision=m", 0},
		{"/api/v2/write?bucket=metrics&precision=h", 0},
		{"/api/v2/write?db=metrics", 0},
		{"/write?bucket=metrics", 0},
	} {
		r := influxDo(t, "POST", base+tc.route, nil, "cpu,host=a v=1 7\n")
		rows := be.written()
		if tc.scale == 0 {
			if r.status != 400 || len(rows) != 0 {
				t.Errorf("%s: %d %s, %d rows, want 400 and none", tc.route, r.status, r.body, len(rows))
			}
			continue
		}
		if r.status != 204 || len(rows) != 1 || rows[0].Time != 7*tc.scale || rows[0].Series != "cpu,host=a" {
			t.Errorf("%s: %d %s, rows %+v, want 204 and cpu,host=a at %d", tc.route, r.status, r.body, rows, 7*tc.scale)
		}
	}
	// writeParams itself, for the names it returns.
	for q, want := range map[string]string{"bucket=db1/rp1": "db1", "bucket=db1": "db1", "bucket=db1/": "db1"} {
		table, prec, err := writeParams(args(q), true)
		if err != nil || table != want || prec != ingest.Nanosecond {
			t.Errorf("v2 %s: %q %v %v, want %q ns", q, table, prec, err, want)
		}
	}
	if table, _, err := writeParams(args("db=a/b&rp=x"), false); err != nil || table != "a/b" {
		t.Errorf("v1 db=a/b: %q %v (a 1.x db is a name, not a bucket)", table, err)
	}
}

// TestHeaderSafe: a message copied into X-Influxdb-Error is one line of
// valid UTF-8, at most maxErrorHeader bytes.
func TestHeaderSafe(t *testing.T) {
	if got := headerSafe("line 1:\n\"x\"\r\tend"); got != `line 1: "x"  end` {
		t.Errorf("headerSafe = %q", got)
	}
	long := strings.Repeat("é", maxErrorHeader) // 2 bytes each
	got := headerSafe("x" + long)
	if len(got) > maxErrorHeader || !utf8.ValidString(got) || !strings.HasPrefix(got, "xé") {
		t.Errorf("headerSafe of %d bytes: %d bytes, valid %v", len(long)+1, len(got), utf8.ValidString(got))
	}
}

// TestAPIClientReadsInfluxShapes: tsdb's own Go client (http/api, used by
// tsdb loadtest) still reads the code and message of a /write error,
// answered in InfluxDB 1.x's shape with the code in X-Tsdb-Error-Code.
func TestAPIClientReadsInfluxShapes(t *testing.T) {
	base := "http://" + startServer(t, NewServer(Config{AuthToken: "tok"}, &influxBackend{}))
	c, err := api.NewClient(base, api.Options{Token: "tok"})
	if err != nil {
		t.Fatal(err)
	}
	err = c.Write(context.Background(), "nope", []byte("cpu v=1 1\n"), api.InsertOptions{})
	var e *api.Error
	if !errors.As(err, &e) || e.Status != 404 || e.Code != api.CodeTableNotFound || e.Message != `database not found: "nope"` {
		t.Fatalf("write to an unknown table: %#v", err)
	}
	if err := c.Write(context.Background(), "metrics", []byte("cpu v=1 1\n"), api.InsertOptions{}); err != nil {
		t.Fatalf("write: %v", err)
	}
}
