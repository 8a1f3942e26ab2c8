package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/tsdb/tsdb/http/api"
)

// The children of the canned split of partB ([1000, 2000)) at 1500.
const (
	child1 = "44444444-4444-4444-4444-444444444444"
	child2 = "55555555-5555-5555-5555-555555555555"
	child9 = "99999999-9999-9999-9999-999999999999"
)

// cannedSplit answers the canned split of partB.
const cannedSplit = `{"txnid":"dddddddddddddddddddddddddddddddddddddddd","txnseq":5,"at":1500,"children":["` + child1 + `","` + child2 + `"]}`

// Partition entries of the canned METADATA files.
const (
	partBPlain = `{"id":"` + partB + `","begin":1000,"end":2000,"servers":[{"server_id":"s1","placement_id":"aaaaaaaa-0000-0000-0000-000000000002"}],"joining":[]}`
	partBSplit = `{"id":"` + partB + `","begin":1000,"end":2000,"servers":[{"server_id":"s1","placement_id":"aaaaaaaa-0000-0000-0000-000000000002"}],"joining":[],
"split":{"points":[1500],"children":[
 {"id":"` + child1 + `","begin":1000,"end":1500,"servers":[{"server_id":"s1","placement_id":"aaaaaaaa-0000-0000-0000-000000000004"}]},
 {"id":"` + child2 + `","begin":1500,"end":2000,"servers":[{"server_id":"s2","placement_id":"bbbbbbbb-0000-0000-0000-000000000005"}]}]}}`
	partBSplitOther = `{"id":"` + partB + `","begin":1000,"end":2000,"servers":[{"server_id":"s1","placement_id":"aaaaaaaa-0000-0000-0000-000000000002"}],"joining":[],
"split":{"points":[1700],"children":[
 {"id":"` + child9 + `","begin":1000,"end":1700,"servers":[{"server_id":"s1","placement_id":"aaaaaaaa-0000-0000-0000-000000000006"}]},
 {"id":"` + child2 + `","begin":1700,"end":2000,"servers":[{"server_id":"s2","placement_id":"bbbbbbbb-0000-0000-0000-000000000007"}]}]}}`
	child1Part = `{"id":"` + child1 + `","begin":1000,"end":1500,"servers":[{"server_id":"s1","placement_id":"aaaaaaaa-0000-0000-0000-000000000004"}],"joining":[]}`
	child2Part = `{"id":"` + child2 + `","begin":1500,"end":2000,"servers":[{"server_id":"s2","placement_id":"bbbbbbbb-0000-0000-0000-000000000005"}],"joining":[]}`
	partAPart  = `{"id":"` + partA + `","begin":null,"end":1000,"servers":[{"server_id":"s1","placement_id":"aaaaaaaa-0000-0000-0000-000000000001"}],"joining":[]}`
	partCPart  = `{"id":"` + partC + `","begin":2000,"end":null,"servers":[{"server_id":"s2","placement_id":"bbbbbbbb-0000-0000-0000-000000000003"}],"joining":[]}`
)

// splitReplicas answers GET /api/v1/tables/metrics?replicas=1 while partB
// splits: its replica on s1 has confirmed its mark to child1, not to child2.
const splitReplicas = `{"config":` + cannedConfig + `,"partitions":[` + partAPart + `,
{"id":"` + partB + `","begin":1000,"end":2000,"servers":[{"server_id":"s1","placement_id":"aaaaaaaa-0000-0000-0000-000000000002"}],"joining":[],
 "split":{"points":[1500],"children":[]},
 "replicas":[{"server":"s1","table":"metrics","partition_id":"` + partB + `","placement_id":"aaaaaaaa-0000-0000-0000-000000000002",
  "begin":1000,"end":2000,"status":"SERVE","txnseq":5,"rows":-1,"bytes":100,"high_seq":10,"synced_seq":10,
  "targets":[{"server":"s1","placement_id":"aaaaaaaa-0000-0000-0000-000000000004","partition_id":"` + child1 + `","kind":"split","mark":10,"mark_reached":true,"confirmed":10,"lag":0},
             {"server":"s2","placement_id":"bbbbbbbb-0000-0000-0000-000000000005","partition_id":"` + child2 + `","kind":"split","mark":10,"confirmed":3,"lag":7}]}]},` +
	partCPart + `]}`

// metadataAnswer is a METADATA answer at txnseq seq with the partitions.
func metadataAnswer(seq int, parts ...string) string {
	return fmt.Sprintf(`{"config":%s,"metadata":{"table":"metrics","txnid":"%040d","txnseq":%d,"parent_txnid":"","partitions":[%s]}}`,
		cannedConfig, seq, seq, strings.Join(parts, ","))
}

// fakeAnswer is one canned answer: a status and a body.
type fakeAnswer struct {
	status int
	body   string
}

// splitFakeAPI is a canned tsdb API for splits: it answers the table GET,
// the split POST, and the METADATA GETs from a script, one answer per GET
// (the last one repeating).
type splitFakeAPI struct {
	split    fakeAnswer
	metadata []fakeAnswer

	mu struct {
		sync.Mutex
		reads    int      // METADATA GETs so far
		requests []string // "METHOD path?query body", but the METADATA and replicas GETs
	}
}

func (f *splitFakeAPI) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	w.Header().Set("Content-Type", "application/json")
	a := f.answer(r, string(body))
	w.WriteHeader(a.status)
	io.WriteString(w, a.body)
}

func (f *splitFakeAPI) answer(r *http.Request, body string) fakeAnswer {
	f.mu.Lock()
	defer f.mu.Unlock()
	switch {
	case r.Method == "GET" && r.URL.Path == "/api/v1/tables/metrics/metadata":
		a := f.metadata[min(f.mu.reads, len(f.metadata)-1)]
		f.mu.reads++
		return a
	case r.Method == "GET" && r.URL.Path == "/api/v1/tables/metrics" && r.URL.Query().Get("replicas") == "1":
		return fakeAnswer{200, splitReplicas}
	}
	f.mu.requests = append(f.mu.requests, strings.TrimSpace(r.Method+" "+r.URL.RequestURI()+" "+body))
	switch {
	case r.Method == "GET" && r.URL.Path == "/api/v1/tables/metrics":
		return fakeAnswer{200, cannedTable}
	case r.Method == "POST" && strings.HasPrefix(r.URL.Path, "/api/v1/tables/metrics/partitions/"):
		return f.split
	}
	return fakeAnswer{404, `{"error":{"code":"table_not_found","message":"metadata: table not found: ` + r.URL.Path + `"}}`}
}

// take returns the requests seen since the last call.
func (f *splitFakeAPI) take() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	r := f.mu.requests
	f.mu.requests = nil
	return r
}

// startSplitFake serves f and returns a function running `tsdb admin ARGS`
// against it, with stdout and stderr apart.
func startSplitFake(t *testing.T, f *splitFakeAPI) func(args ...string) (string, string, error) {
	t.Helper()
	ts := httptest.NewServer(f)
	t.Cleanup(ts.Close)
	return func(args ...string) (string, string, error) {
		return runOutErr(append(append([]string{"admin"}, args...), "--server", ts.URL)...)
	}
}

// runOutErr runs the tsdb command with args and returns stdout and stderr.
func runOutErr(args ...string) (string, string, error) {
	root := newRootCmd()
	var out, errOut bytes.Buffer
	root.SetOut(&out)
	root.SetErr(&errOut)
	root.SetArgs(args)
	err := root.ExecuteContext(context.Background())
	return out.String(), errOut.String(), err
}

const startedB = "split started: partition " + partB + " of metrics at 1970-01-01T00:00:00.0000015Z (1500 ns), children " +
	child1 + ", " + child2 + " (txnseq 5, txnid dddddddddddddddddddddddddddddddddddddddd)\n"

// TestAdminSplitNoWait checks `tsdb admin split --no-wait`: the partition
// prefix resolution, the request and its body with and without --at, the
// started line, and --json.
func TestAdminSplitNoWait(t *testing.T) {
	f := &splitFakeAPI{split: fakeAnswer{200, cannedSplit}}
	admin := startSplitFake(t, f)
	splitB := "POST /api/v1/tables/metrics/partitions/" + partB + "/split "
	for _, tc := range []struct {
		args     []string
		requests []string
	}{
		{[]string{"split", "metrics", "11112", "--no-wait"}, []string{"GET /api/v1/tables/metrics", splitB + "{}"}},
		{[]string{"split", "metrics", strings.ToUpper(partB), "--no-wait", "--at", "1500"}, []string{splitB + `{"at":"1500"}`}},
		{[]string{"split", "metrics", "11112", "--no-wait", "--at", "1970-01-01T00:00:00.0000015Z"},
			[]string{"GET /api/v1/tables/metrics", splitB + `{"at":"1970-01-01T00:00:00.0000015Z"}`}},
	} {
		out, errOut, err := admin(tc.args...)
		if err != nil || out != startedB || errOut != "" {
			t.Errorf("%v: %v\n%q (stderr %q), want\n%q", tc.args, err, out, errOut, startedB)
		}
		if got := f.take(); strings.Join(got, "\n") != strings.Join(tc.requests, "\n") {
			t.Errorf("%v: requests\n%s\nwant\n%s", tc.args, strings.Join(got, "\n"), strings.Join(tc.requests, "\n"))
		}
	}

	out, _, err := admin("split", "metrics", "11112", "--no-wait", "--json")
	var resp api.SplitResponse
	if err != nil || json.Unmarshal([]byte(out), &resp) != nil || resp.TxnSeq != 5 || resp.At != 1500 ||
		len(resp.Children) != 2 || resp.Children[1].String() != child2 || !strings.Contains(out, "\n  \"txnseq\": 5,") {
		t.Errorf("--no-wait --json: %v %+v\n%s", err, resp, out)
	}
}

// TestAdminSplitUsageErrors checks that a bad --at or --wait-timeout, or missing
// arguments, are one-line usage errors (exit status 2) sent before any
// request.
func TestAdminSplitUsageErrors(t *testing.T) {
	f := &splitFakeAPI{split: fakeAnswer{200, cannedSplit}}
	admin := startSplitFake(t, f)
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"split", "metrics", partB, "--at", "yesterday"}, `--at "yesterday": want RFC 3339`},
		{[]string{"split", "metrics", partB, "--at", "2026-01-01 00:00:00"}, "integer nanoseconds"},
		{[]string{"split", "metrics", partB, "--at", "99999999999999999999"}, "outside int64 nanoseconds"},
		{[]string{"split", "metrics", partB, "--wait-timeout", "0s"}, "--wait-timeout 0s"},
		{[]string{"split", "metrics", "11xz"}, "PARTITION"},
		{[]string{"split", "metrics"}, "arg"},
		{[]string{"split", "metrics", partB, "extra"}, "arg"},
	} {
		out, _, err := admin(tc.args...)
		if err == nil || exitCode(err) != 2 || strings.Contains(err.Error(), "\n") || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%v: %v (exit %d) printed %q, want a one-line usage error naming %q", tc.args, err, exitCode(err), out, tc.want)
		}
	}
	if got := f.take(); len(got) != 0 {
		t.Errorf("usage errors sent requests: %q", got)
	}
}

// TestAdminSplitRefused checks the rendering of the server's refusals:
// the message and code on one line, exit status 1, nothing on stdout.
func TestAdminSplitRefused(t *testing.T) {
	f := &splitFakeAPI{}
	admin := startSplitFake(t, f)
	for _, tc := range []struct {
		answer fakeAnswer
		want   []string
	}{
		{fakeAnswer{409, `{"error":{"code":"cannot_split","message":"partition: cannot split: every row is at one time"}}`},
			[]string{"every row is at one time", "(HTTP 409, cannot_split)"}},
		{fakeAnswer{400, `{"error":{"code":"invalid_op","message":"metadata: invalid op: partition is already splitting"}}`},
			[]string{"already splitting", "(HTTP 400, invalid_op)"}},
		{fakeAnswer{400, `{"error":{"code":"bad_request","message":"http: bad request: at: bad time"}}`},
			[]string{"bad time", "(HTTP 400, bad_request)"}},
		{fakeAnswer{200, `not json`}, []string{"undecodable answer"}},
		{fakeAnswer{200, `{"txnid":"d","txnseq":5,"at":1500,"children":[]}`}, []string{"names no children"}},
	} {
		f.split = tc.answer
		out, _, err := admin("split", "metrics", partB)
		assertRequestError(t, []string{"split", tc.answer.body}, out, err, tc.want...)
	}
	out, _, err := admin("split", "nope", partB, "--no-wait")
	assertRequestError(t, []string{"split", "nope"}, out, err, "table not found", "404", "table_not_found")
	out, _, err = admin("split", "metrics", "1111")
	assertRequestError(t, []string{"split", "ambiguous"}, out, err, "ambiguous")
}

// TestAdminSplitWaits checks the wait: one line per change of the progress
// (an older METADATA, a failed read, the children loading with their
// copies' progress), then the finalized children; and with --json, the
// two JSON values on stdout and the progress on stderr.
func TestAdminSplitWaits(t *testing.T) {
	script := []fakeAnswer{
		{200, metadataAnswer(4, partAPart, partBPlain, partCPart)},
		{503, `{"error":{"code":"unavailable","message":"metadata: no quorum"}}`},
		{200, metadataAnswer(5, partAPart, partBSplit, partCPart)},
		{200, metadataAnswer(5, partAPart, partBSplit, partCPart)},
		{200, metadataAnswer(6, partAPart, child1Part, child2Part, partCPart)},
	}
	f := &splitFakeAPI{split: fakeAnswer{200, cannedSplit}, metadata: script}
	admin := startSplitFake(t, f)
	out, errOut, err := admin("split", "metrics", "11112")
	if err != nil || errOut != "" {
		t.Fatalf("split: %v (stderr %q)\n%s", err, errOut, out)
	}
	want := startedB +
		"waiting: the METADATA read is at txnseq 4, before the split's 5\n" +
		"waiting: cannot read the METADATA: metadata: no quorum (HTTP 503, unavailable)\n" +
		"waiting: children loading: 44444444 on s1, 55555555 on s2; copies caught up: child 44444444 1/1, child 55555555 0/1\n" +
		"finalized at txnseq 6: children " + child1 + " [1970-01-01T00:00:00.000001Z, 1970-01-01T00:00:00.0000015Z) on s1; " +
		child2 + " [1970-01-01T00:00:00.0000015Z, 1970-01-01T00:00:00.000002Z) on s2\n"
	if out != want {
		t.Errorf("split:\n%s\nwant\n%s", out, want)
	}

	f = &splitFakeAPI{split: fakeAnswer{200, cannedSplit}, metadata: script[2:]}
	admin = startSplitFake(t, f)
	out, errOut, err = admin("split", "metrics", partB, "--json")
	if err != nil {
		t.Fatalf("split --json: %v (stderr %q)\n%s", err, errOut, out)
	}
	dec := json.NewDecoder(strings.NewReader(out))
	var resp api.SplitResponse
	var children []api.Partition
	if err := dec.Decode(&resp); err != nil || resp.TxnID != strings.Repeat("d", 40) || len(resp.Children) != 2 {
		t.Errorf("split --json: first value %v %+v\n%s", err, resp, out)
	}
	if err := dec.Decode(&children); err != nil || len(children) != 2 || children[0].ID.String() != child1 ||
		*children[0].End != 1500 || children[1].Servers[0].ServerID != "s2" {
		t.Errorf("split --json: second value %v %+v\n%s", err, children, out)
	}
	if dec.More() {
		t.Errorf("split --json: more than two values:\n%s", out)
	}
	if !strings.HasPrefix(errOut, "waiting: children loading: 44444444 on s1") || strings.Count(errOut, "\n") != 1 {
		t.Errorf("split --json: stderr %q, want the one progress line", errOut)
	}
}

// TestAdminSplitAborted checks the wait ends with status 1 when the
// METADATA shows the split will not finalize.
func TestAdminSplitAborted(t *testing.T) {
	for _, tc := range []struct {
		file string
		want []string
	}{
		{metadataAnswer(6, partAPart, partBPlain, partCPart), []string{"split aborted", partB, "no longer splitting"}},
		{metadataAnswer(7, partAPart, partBSplitOther, partCPart), []string{"split aborted", "other children", "99999999 on s1"}},
		{metadataAnswer(6, partAPart, child1Part, partCPart), []string{"split aborted", partB + " is gone at txnseq 6", child2}},
	} {
		f := &splitFakeAPI{split: fakeAnswer{200, cannedSplit}, metadata: []fakeAnswer{{200, tc.file}}}
		out, _, err := startSplitFake(t, f)("split", "metrics", partB)
		if err == nil || exitCode(err) != 1 || strings.Contains(err.Error(), "\n") {
			t.Errorf("%v: %v (exit %d), want a one-line error, exit status 1", tc.want, err, exitCode(err))
			continue
		}
		for _, w := range append(tc.want, "tsdb admin partitions metrics") {
			if !strings.Contains(err.Error(), w) {
				t.Errorf("error %q lacks %q", err, w)
			}
		}
		if out != startedB {
			t.Errorf("%v: printed %q, want the started line", tc.want, out)
		}
	}
}

// TestAdminSplitTimeout checks a split that does not finalize within
// --wait-timeout: exit status 1, saying it continues and how to follow it.
func TestAdminSplitTimeout(t *testing.T) {
	f := &splitFakeAPI{split: fakeAnswer{200, cannedSplit},
		metadata: []fakeAnswer{{200, metadataAnswer(5, partAPart, partBSplit, partCPart)}}}
	out, _, err := startSplitFake(t, f)("split", "metrics", partB, "--wait-timeout", "1s")
	if err == nil || exitCode(err) != 1 || strings.Contains(err.Error(), "\n") {
		t.Fatalf("%v (exit %d), want a one-line error, exit status 1\n%s", err, exitCode(err), out)
	}
	for _, w := range []string{"not finalized after 1s (--wait-timeout)", "continues in the background", "tsdb admin partitions metrics",
		"last seen: children loading"} {
		if !strings.Contains(err.Error(), w) {
			t.Errorf("error %q lacks %q", err, w)
		}
	}
	if !strings.HasPrefix(out, startedB+"waiting: children loading") {
		t.Errorf("printed %q", out)
	}
}

// TestAdminSplitAgainstServer splits a partition of a real server's table
// holding 100 rows at spread times, waits for the split to finalize, and
// checks the table then has the two children as partitions and still all
// its rows; then a refused split (a point outside the partition) and one of
// a partition whose rows are all at one time.
func TestAdminSplitAgainstServer(t *testing.T) {
	tokenFile := writeFile(t, "token", "s3cret\n")
	base := startServerCmd(t, tokenFile)
	call := func(method, path, body string) []byte {
		t.Helper()
		req, _ := http.NewRequest(method, base+path, strings.NewReader(body))
		req.Header.Set("Authorization", "Bearer s3cret")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		if resp.StatusCode/100 != 2 {
			t.Fatalf("%s %s: %d %s", method, path, resp.StatusCode, b)
		}
		return b
	}
	table := func(name string) api.TableResponse {
		t.Helper()
		var tr api.TableResponse
		if err := json.Unmarshal(call("GET", "/api/v1/tables/"+name, ""), &tr); err != nil {
			t.Fatal(err)
		}
		return tr
	}
	const t0 = int64(1767225600000000000) // 2026-01-01T00:00:00Z
	var lines, flat strings.Builder
	for i := range int64(100) {
		fmt.Fprintf(&lines, "cpu,host=h%d usage=%d %d\n", i%7, i, t0+i*int64(1e9))
		fmt.Fprintf(&flat, "cpu,host=h%d usage=%d %d\n", i, i, t0)
	}
	for name, rows := range map[string]string{"metrics": lines.String(), "flat": flat.String()} {
		call("POST", "/api/v1/tables", `{"name":"`+name+`","replication_factor":1}`)
		call("POST", "/write?db="+name+"&precision=ns", rows)
	}
	admin := func(args ...string) (string, error) {
		return run(append(append([]string{"admin"}, args...), "--server", base, "--auth-token-file", tokenFile)...)
	}

	parts := table("metrics").Partitions
	if len(parts) != 1 {
		t.Fatalf("want one partition before the split: %+v", parts)
	}
	pid := parts[0].ID
	out, err := admin("split", "metrics", pid.String()[:8])
	if err != nil {
		t.Fatalf("split: %v\n%s", err, out)
	}
	t.Log(out)
	got := strings.Split(strings.TrimSpace(out), "\n")
	if !strings.HasPrefix(got[0], "split started: partition "+pid.String()+" of metrics at 2026-01-01T00:") ||
		!strings.HasPrefix(got[len(got)-1], "finalized at txnseq ") {
		t.Fatalf("split output:\n%s", out)
	}
	after := table("metrics").Partitions
	if len(after) != 2 || after[0].ID == pid || after[1].ID == pid || *after[0].End != *after[1].Begin ||
		!strings.Contains(got[0], after[0].ID.String()+", "+after[1].ID.String()) {
		t.Fatalf("partitions after the split: %+v\n%s", after, out)
	}
	at := *after[0].End
	if at <= t0 || at > t0+99*int64(1e9) {
		t.Errorf("split point %d outside the rows' times", at)
	}
	var q struct {
		Rows []json.RawMessage `json:"rows"`
	}
	if err := json.Unmarshal(call("GET", "/api/v1/tables/metrics/query?series=cpu*", ""), &q); err != nil || len(q.Rows) != 100 {
		t.Errorf("query after the split: %v, %d rows, want 100", err, len(q.Rows))
	}

	// A point outside the first child's range.
	out, err = admin("split", "metrics", after[0].ID.String(), "--at", fmt.Sprint(at+1), "--no-wait")
	assertRequestError(t, []string{"split", "outside"}, out, err, "HTTP 400", "invalid_op")
	// The split partition is no longer current.
	out, err = admin("split", "metrics", pid.String(), "--no-wait")
	assertRequestError(t, []string{"split", "gone"}, out, err, "HTTP 400", "invalid_op", pid.String())
	// Every row at one time.
	out, err = admin("split", "flat", table("flat").Partitions[0].ID.String(), "--no-wait")
	assertRequestError(t, []string{"split", "flat"}, out, err, "HTTP 409", "cannot_split")
	if n := len(table("flat").Partitions); n != 1 {
		t.Errorf("flat has %d partitions, want 1", n)
	}
}
