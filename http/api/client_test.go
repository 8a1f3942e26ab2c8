package api

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"
)

// fakeServer answers the i-th request (from 0) with answers[min(i, last)]
// and records every request.
type fakeServer struct {
	t       *testing.T
	answers []fakeAnswer
	mu      sync.Mutex
	reqs    []recorded
}

type fakeAnswer struct {
	status     int
	retryAfter string
	body       string
}

type recorded struct {
	method, uri, auth, contentType, consistency, smear, body string
}

func (f *fakeServer) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	b, _ := io.ReadAll(r.Body)
	f.mu.Lock()
	i := len(f.reqs)
	f.reqs = append(f.reqs, recorded{r.Method, r.URL.RequestURI(), r.Header.Get("Authorization"), r.Header.Get("Content-Type"),
		r.Header.Get(HeaderConsistency), r.Header.Get(HeaderSmear), string(b)})
	a := f.answers[min(i, len(f.answers)-1)]
	f.mu.Unlock()
	if a.retryAfter != "" {
		w.Header().Set("Retry-After", a.retryAfter)
	}
	w.WriteHeader(a.status)
	io.WriteString(w, a.body)
}

func (f *fakeServer) requests() []recorded {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]recorded(nil), f.reqs...)
}

// start serves answers and returns a client of it with o.
func start(t *testing.T, o Options, answers ...fakeAnswer) (*Client, *fakeServer) {
	t.Helper()
	f := &fakeServer{t: t, answers: answers}
	ts := httptest.NewServer(f)
	t.Cleanup(ts.Close)
	c, err := NewClient(ts.URL+"/", o)
	if err != nil {
		t.Fatal(err)
	}
	return c, f
}

const overloaded = `{"error":{"code":"overloaded","message":"too many requests"}}`

// TestClientRetries503 checks that a 503 is retried (after Retry-After,
// bounded by MaxRetryWait) until an answer other than 503 comes, and that
// the answer is then decoded.
func TestClientRetries503(t *testing.T) {
	c, f := start(t, Options{MaxRetryWait: time.Millisecond},
		fakeAnswer{503, "1", overloaded}, fakeAnswer{503, "", overloaded}, fakeAnswer{200, "", `{"servers":[{"id":"s1"}]}`})
	got, err := c.Cluster(context.Background())
	if err != nil || len(got.Servers) != 1 || got.Servers[0].ID != "s1" {
		t.Fatalf("Cluster: %+v, %v", got, err)
	}
	if n := len(f.requests()); n != 3 {
		t.Errorf("%d requests, want 3 (two 503s retried)", n)
	}
}

// TestClientRetryWait checks the wait before a retry: the answer's
// Retry-After, capped by MaxRetryWait; else a backoff in [d/2, d] that
// doubles; none after the last attempt or for another status or an
// outcome-unknown 503.
func TestClientRetryWait(t *testing.T) {
	c, err := NewClient("http://x", Options{Attempts: 5, MaxRetryWait: 10 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	e503 := func(code string, ra time.Duration) error {
		return &Error{Status: 503, Code: code, RetryAfter: ra}
	}
	for _, tc := range []struct {
		err      error
		attempt  int
		retry    bool
		min, max time.Duration
	}{
		{e503(CodeOverloaded, 7*time.Second), 1, true, 7 * time.Second, 7 * time.Second},
		{e503(CodeQueueFull, time.Hour), 2, true, 10 * time.Second, 10 * time.Second},
		{e503(CodeUnavailable, 0), 1, true, 50 * time.Millisecond, 100 * time.Millisecond},
		{e503(CodeUnavailable, 0), 3, true, 200 * time.Millisecond, 400 * time.Millisecond},
		{e503(CodeUnavailable, time.Second), 5, false, 0, 0},
		{e503(CodeOutcomeUnknown, time.Second), 1, false, 0, 0},
		{e503(CodeOutcomeUnknownRows, time.Second), 1, false, 0, 0},
		{&Error{Status: 429, RetryAfter: time.Second}, 1, false, 0, 0},
		{&Error{Status: 500}, 1, false, 0, 0},
		{errors.New("connection refused"), 1, false, 0, 0},
	} {
		d, retry := c.retryWait(tc.err, tc.attempt)
		if retry != tc.retry || d < tc.min || d > tc.max {
			t.Errorf("%v at attempt %d: wait %v, retry %v; want retry %v in [%v, %v]", tc.err, tc.attempt, d, retry, tc.retry, tc.min, tc.max)
		}
	}
}

// TestClientRetriesAreBounded checks that a server that keeps answering
// 503 gets Attempts requests, and the call the last answer's *Error.
func TestClientRetriesAreBounded(t *testing.T) {
	c, f := start(t, Options{Attempts: 3, MaxRetryWait: time.Millisecond}, fakeAnswer{503, "2", overloaded})
	_, err := c.Health(context.Background())
	var e *Error
	if !errors.As(err, &e) || e.Status != 503 || e.Code != CodeOverloaded || e.RetryAfter != 2*time.Second {
		t.Fatalf("Health: %v (%#v), want the 503's *Error", err, e)
	}
	if n := len(f.requests()); n != 3 {
		t.Errorf("%d requests, want 3 (Attempts)", n)
	}
	c1, f1 := start(t, Options{Attempts: 1}, fakeAnswer{503, "1", overloaded})
	if _, err := c1.Health(context.Background()); StatusOf(err) != 503 || len(f1.requests()) != 1 {
		t.Errorf("Attempts 1: %v after %d requests, want one 503", err, len(f1.requests()))
	}
}

// TestClientDoesNotRetry checks that 4xx, 500 and outcome-unknown 503
// answers are returned at once, decoded.
func TestClientDoesNotRetry(t *testing.T) {
	for _, a := range []fakeAnswer{
		{400, "", `{"error":{"code":"bad_request","message":"http: bad request: name"}}`},
		{404, "", `{"error":{"code":"table_not_found","message":"no table \"x\""}}`},
		{409, "1", `{"error":{"code":"table_exists","message":"exists"}}`},
		{500, "", `{"error":{"code":"internal","message":"boom"}}`},
		{503, "1", `{"error":{"code":"insert_outcome_unknown","message":"maybe"}}`},
	} {
		c, f := start(t, Options{MaxRetryWait: time.Millisecond}, a)
		_, err := c.Insert(context.Background(), "x", []Row{{Time: 1, Series: "a", Fields: map[string]any{"v": 1.0}}}, InsertOptions{})
		var e *Error
		var want ErrorResponse
		if err := json.Unmarshal([]byte(a.body), &want); err != nil {
			t.Fatal(err)
		}
		if !errors.As(err, &e) || e.Status != a.status || e.Code != want.Error.Code || e.Message != want.Error.Message ||
			e.Method != "POST" || e.Path != "/api/v1/tables/x/insert" {
			t.Errorf("%d: %v (%#v)", a.status, err, e)
		}
		if n := len(f.requests()); n != 1 {
			t.Errorf("%d %s: %d requests, want 1", a.status, want.Error.Code, n)
		}
	}
}

// TestClientErrorText checks the text of an error answer: the error body's
// message, or the start of a body that is not the API's JSON error.
func TestClientErrorText(t *testing.T) {
	for _, tc := range []struct {
		a          fakeAnswer
		want, code string
	}{
		{fakeAnswer{404, "", `{"error":{"code":"table_not_found","message":"no table"}}`}, "GET /api/v1/tables/t: 404 no table", "table_not_found"},
		{fakeAnswer{502, "", "  <html>bad gateway</html>\n"}, "GET /api/v1/tables/t: 502 <html>bad gateway</html>", ""},
		{fakeAnswer{500, "", strings.Repeat("x", 300)}, "GET /api/v1/tables/t: 500 " + strings.Repeat("x", 200), ""},
	} {
		c, _ := start(t, Options{}, tc.a)
		_, err := c.Table(context.Background(), "t")
		if err == nil || err.Error() != tc.want || CodeOf(err) != tc.code || StatusOf(err) != tc.a.status {
			t.Errorf("%d: %v (code %q), want %q (code %q)", tc.a.status, err, CodeOf(err), tc.want, tc.code)
		}
	}
	c, _ := start(t, Options{}, fakeAnswer{200, "", `{"servers": 3}`})
	if _, err := c.Cluster(context.Background()); err == nil || !strings.Contains(err.Error(), "undecodable answer") || StatusOf(err) != 0 {
		t.Errorf("a 200 that does not decode: %v", err)
	}
	// An empty 200 is not an answer of the expected value; an empty 204 is
	// the answer of a call that expects none.
	c, _ = start(t, Options{}, fakeAnswer{200, "", ""})
	var de *DecodeError
	if _, err := c.Cluster(context.Background()); !errors.As(err, &de) || de.Path != "/api/v1/cluster" {
		t.Errorf("an empty 200 body: %v, want a *DecodeError", err)
	}
	c, _ = start(t, Options{}, fakeAnswer{204, "", ""})
	var v map[string]any
	if err := c.Do(context.Background(), Request{Method: http.MethodPost, Path: "/api/v1/x"}, &v); err != nil || v != nil {
		t.Errorf("an empty 204: %v, %v", err, v)
	}
}

// TestClientRequests checks what the typed calls send: method, path,
// query, headers, body and the bearer token.
func TestClientRequests(t *testing.T) {
	c, f := start(t, Options{Token: "tok"}, fakeAnswer{200, "", `{}`})
	ctx := context.Background()
	pid := uuid.MustParse("11111111-2222-3333-4444-555555555555")
	from, to := int64(10), int64(20)
	c.Write(ctx, "cpu", []byte("a v=1 1\n"), InsertOptions{NoSmear: true, Consistency: ConsistencyAll})
	c.QueryRaw(ctx, "cpu", Query{From: &from, To: &to, Series: "a*", Fields: []string{"v", "w"}, Limit: 5, Consistency: ConsistencyOne})
	c.QueryAgg(ctx, "cpu", Query{Agg: "mean", Step: "1m", GroupAll: true})
	c.Metadata(ctx, "cpu", "ab")
	c.TableReplicas(ctx, "cpu")
	c.Drain(ctx, "s 1", false)
	c.JoinServer(ctx, "cpu", pid, ServerChangeRequest{Server: "s3", Force: true})
	c.SetOffline(ctx, "cpu", pid, true)
	c.CreateTable(ctx, CreateTableRequest{Name: "cpu"})
	day := Duration(24 * time.Hour)
	c.PatchTable(ctx, "cpu", PatchTableRequest{Retention: &day})
	c.DropTable(ctx, "cpu", false)
	c.DropTable(ctx, "cpu", true)
	want := []recorded{
		{"POST", "/write?db=cpu&precision=ns", "Bearer tok", "text/plain; charset=utf-8", "all", "off", "a v=1 1\n"},
		{"GET", "/api/v1/tables/cpu/query?fields=v%2Cw&from=10&limit=5&series=a%2A&to=20", "Bearer tok", "", "one", "", ""},
		{"GET", "/api/v1/tables/cpu/query?agg=mean&group=none&step=1m", "Bearer tok", "", "", "", ""},
		{"GET", "/api/v1/tables/cpu/metadata?txnid=ab", "Bearer tok", "", "", "", ""},
		{"GET", "/api/v1/tables/cpu?replicas=1", "Bearer tok", "", "", "", ""},
		{"DELETE", "/api/v1/servers/s%201/drain", "Bearer tok", "", "", "", ""},
		{"POST", "/api/v1/tables/cpu/partitions/" + pid.String() + "/join", "Bearer tok", "application/json", "", "", `{"server":"s3","force":true}`},
		{"POST", "/api/v1/tables/cpu/partitions/" + pid.String() + "/offline", "Bearer tok", "application/json", "", "", `{}`},
		{"POST", "/api/v1/tables", "Bearer tok", "application/json", "", "", `{"name":"cpu"}`},
		{"PATCH", "/api/v1/tables/cpu", "Bearer tok", "application/json", "", "", `{"retention":"24h0m0s"}`},
		{"DELETE", "/api/v1/tables/cpu", "Bearer tok", "", "", "", ""},
		{"DELETE", "/api/v1/tables/cpu?force=true", "Bearer tok", "", "", "", ""},
	}
	got := f.requests()
	if len(got) != len(want) {
		t.Fatalf("%d requests, want %d: %+v", len(got), len(want), got)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("request %d:\n got %+v\nwant %+v", i, got[i], want[i])
		}
	}
	var raw []byte
	if err := c.Get(ctx, "/api/v1/cluster", nil, &raw); err != nil || string(raw) != `{}` {
		t.Errorf("raw answer: %q, %v", raw, err)
	}
}

// TestClientTimeout checks that Timeout bounds a request the server does
// not answer, and that the error says so.
func TestClientTimeout(t *testing.T) {
	release := make(chan struct{})
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-r.Context().Done():
		case <-release:
		}
	}))
	defer ts.Close()
	defer close(release)
	c, err := NewClient(ts.URL, Options{Timeout: 20 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.Cluster(context.Background()); !IsTimeout(err) || StatusOf(err) != 0 {
		t.Errorf("Cluster of a server that does not answer: %v, want a timeout", err)
	}
}

// TestNewClientURL checks the base URL's validation.
func TestNewClientURL(t *testing.T) {
	for _, u := range []string{"", "127.0.0.1:8080", "ftp://h", "http://", "http://h?x=1", "http://h#f"} {
		if _, err := NewClient(u, Options{}); err == nil {
			t.Errorf("NewClient(%q) accepted", u)
		}
	}
	c, err := NewClient(" https://h:1/ ", Options{})
	if err != nil || c.Base() != "https://h:1" || c.Timeout() != DefaultTimeout {
		t.Errorf("NewClient: %v, %v", c, err)
	}
}
