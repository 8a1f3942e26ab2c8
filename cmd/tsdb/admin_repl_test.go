package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"strings"
	"sync"
	"testing"

	"github.com/tsdb/tsdb/http/api"
)

// Partition ids of the canned table: the first two share the prefix 1111.
const (
	partA = "11111111-1111-1111-1111-111111111111"
	partB = "11112222-2222-2222-2222-222222222222"
	partC = "33333333-3333-3333-3333-333333333333"
)

const cannedConfig = `{"name":"metrics","metadata_txnid":"bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb","metadata_txnseq":3,
"metadata_servers":["s1"],"replication_factor":2,"created_at":"2026-01-01T00:00:00Z"}`

// cannedTable answers GET /api/v1/tables/metrics.
const cannedTable = `{"config":` + cannedConfig + `,"partitions":[
{"id":"` + partA + `","begin":null,"end":1000,"servers":[{"server_id":"s1","placement_id":"aaaaaaaa-0000-0000-0000-000000000001"}],"joining":[]},
{"id":"` + partB + `","begin":1000,"end":2000,"servers":[{"server_id":"s1","placement_id":"aaaaaaaa-0000-0000-0000-000000000002"}],"joining":[]},
{"id":"` + partC + `","begin":2000,"end":null,"servers":[{"server_id":"s2","placement_id":"bbbbbbbb-0000-0000-0000-000000000003"}],"joining":[]}]}`

// cannedReplicas answers GET /api/v1/tables/metrics?replicas=1: a partition
// with two reporting replicas (one joining) and a listed server that did
// not report, and an offline partition splitting in two with no replica.
const cannedReplicas = `{"config":` + cannedConfig + `,"partitions":[
{"id":"` + partA + `","begin":null,"end":1767225600000000000,
 "servers":[{"server_id":"s1","placement_id":"aaaaaaaa-0000-0000-0000-000000000001"},{"server_id":"s2","placement_id":"bbbbbbbb-0000-0000-0000-000000000002"}],
 "joining":[{"server_id":"s3","placement_id":"cccccccc-0000-0000-0000-000000000003"}],
 "replicas":[
  {"server":"s1","table":"metrics","partition_id":"` + partA + `","placement_id":"aaaaaaaa-0000-0000-0000-000000000001",
   "begin":null,"end":1767225600000000000,"status":"SERVE","txnseq":3,"rows":1200,"bytes":65536,"high_seq":1250,"synced_seq":1250,
   "log_start":1000,"log_length":250,"snapshots":{"active":1,"done":3,"failed":1},
   "moved":{"push":{"rows":1200,"bytes":65536},"snapshot":{"rows":300,"bytes":3565158},"join":{"rows":250,"bytes":512}},
   "targets":[{"server":"s2","placement_id":"bbbbbbbb-0000-0000-0000-000000000002","kind":"replica","confirmed":1250,"lag":0},
              {"server":"s3","placement_id":"cccccccc-0000-0000-0000-000000000003","kind":"joining","confirmed":250,"lag":1000,"last_error":"refused"}]},
  {"server":"s3","table":"metrics","partition_id":"` + partA + `","placement_id":"cccccccc-0000-0000-0000-000000000003",
   "begin":null,"end":1767225600000000000,"status":"LOAD","txnseq":3,"rows":-1,"bytes":4096,"high_seq":250,"synced_seq":250,"log_start":0,"log_length":250,"targets":[]}]},
{"id":"` + partC + `","begin":1767225600000000000,"end":null,
 "servers":[{"server_id":"s2","placement_id":"dddddddd-0000-0000-0000-000000000004"}],"joining":[],"offline":true,
 "split":{"points":[1767225700000000000],"children":[
  {"id":"44444444-4444-4444-4444-444444444444","begin":1767225600000000000,"end":1767225700000000000,"servers":[]},
  {"id":"55555555-5555-5555-5555-555555555555","begin":1767225700000000000,"end":null,"servers":[]}]},
 "replicas":[]}]}`

// fakeAPI is a canned tsdb API: it answers the cluster, table and replica
// GETs and records every join and leave it is posted, answering changeStatus
// with changeBody.
type fakeAPI struct {
	url          string // set by startFakeAPI
	changeStatus int
	changeBody   string

	mu struct {
		sync.Mutex
		requests []string // "METHOD path?query body"
	}
}

func (f *fakeAPI) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	f.mu.Lock()
	f.mu.requests = append(f.mu.requests, strings.TrimSpace(r.Method+" "+r.URL.RequestURI()+" "+string(body)))
	f.mu.Unlock()
	if r.Header.Get("Authorization") != "Bearer tok" {
		w.WriteHeader(401)
		io.WriteString(w, `{"error":{"code":"unauthorized","message":"missing or invalid bearer token"}}`)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	switch {
	case r.Method == "GET" && r.URL.Path == "/api/v1/cluster":
		io.WriteString(w, `{"servers":[{"id":"s1","addr":"127.0.0.1:8080","started_at":"2026-01-01T00:00:00Z","replicas":3},
{"id":"s2","addr":"127.0.0.1:8081","started_at":"2026-01-02T03:04:05.5Z","replicas":12,"bytes":4096,"insert_rows_per_sec":1234.4,"master":true}]}`)
	case r.Method == "GET" && r.URL.Path == "/api/v1/tables/metrics" && r.URL.Query().Get("replicas") == "1":
		io.WriteString(w, cannedReplicas)
	case r.Method == "GET" && r.URL.Path == "/api/v1/tables/metrics":
		io.WriteString(w, cannedTable)
	case r.Method == "POST" && strings.HasPrefix(r.URL.Path, "/api/v1/tables/metrics/partitions/"):
		w.WriteHeader(f.changeStatus)
		io.WriteString(w, f.changeBody)
	default:
		w.WriteHeader(404)
		io.WriteString(w, `{"error":{"code":"table_not_found","message":"metadata: table not found: `+r.URL.Path+`"}}`)
	}
}

// take returns the requests seen since the last call.
func (f *fakeAPI) take() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	r := f.mu.requests
	f.mu.requests = nil
	return r
}

// startFakeAPI serves a fakeAPI whose changes succeed, and returns it and
// a function running `tsdb admin ARGS` against it with the token.
func startFakeAPI(t *testing.T) (*fakeAPI, func(args ...string) (string, error)) {
	t.Helper()
	f := &fakeAPI{changeStatus: 200, changeBody: `{"txnid":"cccccccccccccccccccccccccccccccccccccccc","txnseq":4}`}
	ts := httptest.NewServer(f)
	t.Cleanup(ts.Close)
	f.url = ts.URL
	tokenFile := writeFile(t, "token", "tok\n")
	return f, func(args ...string) (string, error) {
		return run(append(append([]string{"admin"}, args...), "--server", ts.URL, "--auth-token-file", tokenFile)...)
	}
}

// TestAdminServers checks `tsdb admin servers`: the table, --json, and an
// empty cluster.
func TestAdminServers(t *testing.T) {
	f, admin := startFakeAPI(t)
	out, err := admin("servers")
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(out), "\n")
	want := []string{"ID ROLE ADDR STARTED REPLICAS BYTES INSERT ROWS/S SMEAR QUEUE ROWS SMEAR QUEUE BYTES",
		"s1 - 127.0.0.1:8080 2026-01-01T00:00:00Z 3 0 0 0 0",
		"s2 master 127.0.0.1:8081 2026-01-02T03:04:05Z 12 4096 1234 0 0"}
	if len(lines) != len(want) {
		t.Fatalf("servers:\n%s", out)
	}
	for i, l := range lines {
		if got := strings.Join(strings.Fields(l), " "); got != want[i] {
			t.Errorf("line %d: %q, want %q", i, got, want[i])
		}
	}
	if got := f.take(); len(got) != 1 || got[0] != "GET /api/v1/cluster" {
		t.Errorf("requests %q", got)
	}
	out, err = admin("servers", "--json")
	var servers []api.ServerInfo
	if err != nil || json.Unmarshal([]byte(out), &servers) != nil || len(servers) != 2 || servers[1].ID != "s2" || servers[1].Replicas != 12 || !servers[1].Master {
		t.Errorf("servers --json: %v %+v\n%s", err, servers, out)
	}

	empty := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.WriteString(w, `{"servers":null}`)
	}))
	defer empty.Close()
	if out, err := run("admin", "servers", "--server", empty.URL); err != nil || out != "no servers\n" {
		t.Errorf("no servers: %q %v", out, err)
	}
	if out, err := run("admin", "servers", "--json", "--server", empty.URL); err != nil || out != "[]\n" {
		t.Errorf("no servers --json: %q %v", out, err)
	}
}

// TestAdminPartitions checks `tsdb admin partitions`: a block per
// partition, one line per replica with its targets' lag, listed servers
// without a report, --json, and a refused request.
func TestAdminPartitions(t *testing.T) {
	f, admin := startFakeAPI(t)
	out, err := admin("partitions", "metrics")
	if err != nil {
		t.Fatal(err)
	}
	if got := f.take(); len(got) != 1 || got[0] != "GET /api/v1/tables/metrics?replicas=1" {
		t.Errorf("requests %q", got)
	}
	blocks := strings.Split(strings.TrimSpace(out), "\n\n")
	if len(blocks) != 2 {
		t.Fatalf("want two blocks:\n%s", out)
	}
	fields := func(block string) []string {
		var lines []string
		for _, l := range strings.Split(block, "\n") {
			lines = append(lines, strings.Join(strings.Fields(l), " "))
		}
		return lines
	}
	for i, want := range [][]string{{
		"partition " + partA + " [-inf, 2026-01-01T00:00:00Z)",
		"SERVER ROLE PLACEMENT STATUS ROWS BYTES HIGH SEQ LOG START LOG LEN SNAPSHOTS TARGETS MOVED ROWS/BYTES",
		"s1 server aaaaaaaa SERVE 1200 65536 1250 1000 250 1 running, 3 done, 1 failed →s2:0 →s3:1000 push 1.2k/64KiB, snapshot 300/3.4MiB, join 250/512B",
		"s3 joining cccccccc LOAD - 4096 250 0 250 - - -",
		"s2 server bbbbbbbb no report - - - - - - - -",
	}, {
		"partition " + partC + " [2026-01-01T00:00:00Z, +inf) splitting into 2 offline",
		"SERVER ROLE PLACEMENT STATUS ROWS BYTES HIGH SEQ LOG START LOG LEN SNAPSHOTS TARGETS MOVED ROWS/BYTES",
		"s2 server dddddddd no report - - - - - - - -",
	}} {
		got := fields(blocks[i])
		if strings.Join(got, "\n") != strings.Join(want, "\n") {
			t.Errorf("block %d:\n%s\nwant\n%s", i, strings.Join(got, "\n"), strings.Join(want, "\n"))
		}
	}
	// The columns line up within a block.
	lines := strings.Split(blocks[0], "\n")
	for _, h := range []struct{ head, a, b string }{{"STATUS", "SERVE", "LOAD"}, {"LOG START", "1000", "0"}, {"TARGETS", "→s2", "-"}} {
		col := strings.Index(lines[1], h.head)
		if col < 0 || strings.Index(lines[2], h.a) != col || strings.Index(lines[3][col:], h.b) != 0 {
			t.Errorf("column %s does not line up:\n%s", h.head, blocks[0])
		}
	}

	out, err = admin("partitions", "metrics", "--json")
	var a, b any
	if err != nil || json.Unmarshal([]byte(cannedReplicas), &a) != nil || json.Unmarshal([]byte(out), &b) != nil ||
		!jsonSame(a, b) || !strings.Contains(out, "\n  \"partitions\": [") {
		t.Errorf("--json is not the answer, indented: %v\n%s", err, out)
	}

	out, err = admin("partitions", "nope")
	assertRequestError(t, []string{"partitions", "nope"}, out, err, "table not found", "404", "table_not_found")
	out, err = run("admin", "partitions", "metrics", "--server", f.url)
	assertRequestError(t, []string{"partitions", "no token"}, out, err, "401", "unauthorized")
}

// TestAdminJoinLeave checks `tsdb admin join` and `leave`: the partition
// prefix resolution, the request sent, the output, and every error path
// with its exit status.
func TestAdminJoinLeave(t *testing.T) {
	f, admin := startFakeAPI(t)
	for _, tc := range []struct {
		args     []string
		requests []string
		out      string
	}{
		{[]string{"join", "metrics", "11112", "s3"},
			[]string{"GET /api/v1/tables/metrics", "POST /api/v1/tables/metrics/partitions/" + partB + `/join {"server":"s3"}`},
			"JOIN_SERVER s3, partition " + partB + " of metrics: committed txnid " + strings.Repeat("c", 40) + " txnseq 4\n"},
		{[]string{"join", "metrics", "3", "s3", "--force"},
			[]string{"GET /api/v1/tables/metrics", "POST /api/v1/tables/metrics/partitions/" + partC + `/join {"server":"s3","force":true}`},
			"FORCE_JOIN s3, partition " + partC + " of metrics: committed txnid " + strings.Repeat("c", 40) + " txnseq 4\n"},
		{[]string{"leave", "metrics", "11111111-1", "s1"},
			[]string{"GET /api/v1/tables/metrics", "POST /api/v1/tables/metrics/partitions/" + partA + `/leave {"server":"s1"}`},
			"REMOVE_SERVER s1, partition " + partA + " of metrics: committed txnid " + strings.Repeat("c", 40) + " txnseq 4\n"},
		// Upper case works; a full id is sent as is, without a lookup.
		{[]string{"leave", "metrics", "3333333", "s2"},
			[]string{"GET /api/v1/tables/metrics", "POST /api/v1/tables/metrics/partitions/" + partC + `/leave {"server":"s2"}`},
			"REMOVE_SERVER s2, partition " + partC + " of metrics: committed txnid " + strings.Repeat("c", 40) + " txnseq 4\n"},
		{[]string{"join", "metrics", strings.ToUpper(partA), "s9"},
			[]string{"POST /api/v1/tables/metrics/partitions/" + partA + `/join {"server":"s9"}`},
			"JOIN_SERVER s9, partition " + partA + " of metrics: committed txnid " + strings.Repeat("c", 40) + " txnseq 4\n"},
		{[]string{"join", "metrics", "66666666-6666-6666-6666-666666666666", "s9"},
			[]string{`POST /api/v1/tables/metrics/partitions/66666666-6666-6666-6666-666666666666/join {"server":"s9"}`},
			"JOIN_SERVER s9, partition 66666666-6666-6666-6666-666666666666 of metrics: committed txnid " + strings.Repeat("c", 40) + " txnseq 4\n"},
	} {
		out, err := admin(tc.args...)
		if err != nil || out != tc.out {
			t.Errorf("%v: %v\n%q, want\n%q", tc.args, err, out, tc.out)
		}
		if got := f.take(); strings.Join(got, "\n") != strings.Join(tc.requests, "\n") {
			t.Errorf("%v: requests\n%s\nwant\n%s", tc.args, strings.Join(got, "\n"), strings.Join(tc.requests, "\n"))
		}
	}
	out, err := admin("join", "metrics", "11112", "s3", "--json")
	if err != nil || strings.TrimSpace(out) != "{\n  \"txnid\": \""+strings.Repeat("c", 40)+"\",\n  \"txnseq\": 4\n}" {
		t.Errorf("join --json: %v\n%s", err, out)
	}
	f.take()

	// Exit status 1: an unknown or ambiguous prefix, an unknown table, and
	// the server's refusals.
	for _, tc := range []struct {
		args []string
		want []string
	}{
		{[]string{"join", "metrics", "1111", "s3"}, []string{`"1111"`, "ambiguous", partA, partB, "more digits"}},
		{[]string{"leave", "metrics", "11", "s3"}, []string{"ambiguous", "2 partitions"}},
		{[]string{"join", "metrics", "abc", "s3"}, []string{`no partition whose id starts with "abc"`, "tsdb admin partitions metrics"}},
		{[]string{"join", "nope", "abc", "s3"}, []string{"table not found", "404"}},
	} {
		out, err := admin(tc.args...)
		assertRequestError(t, tc.args, out, err, tc.want...)
	}
	for _, r := range f.take() {
		if !strings.HasPrefix(r, "GET /api/v1/tables/") {
			t.Errorf("a command refused for its partition sent %q", r)
		}
	}
	for _, tc := range []struct {
		status     int
		body, want string
	}{
		{409, `{"error":{"code":"conflict","message":"metadata: conflict: another change won"}}`, "another change won (HTTP 409, conflict)"},
		{400, `{"error":{"code":"invalid_op","message":"metadata: invalid op: server \"s3\" already serves partition"}}`, "(HTTP 400, invalid_op)"},
		{400, `{"error":{"code":"bad_request","message":"http: bad request: server: server id \"a/b\" contains '/'"}}`, "contains '/'"},
		{503, `{"error":{"code":"no_quorum","message":"metadata: no quorum"}}`, "HTTP 503"},
		{200, `not json`, "undecodable answer"},
	} {
		f.changeStatus, f.changeBody = tc.status, tc.body
		out, err := admin("join", "metrics", partA, "s3")
		assertRequestError(t, []string{"join", tc.want}, out, err, tc.want)
	}

	// Exit status 2: usage errors, before any request.
	f.take()
	for _, args := range [][]string{
		{"join", "metrics", "11xz", "s3"},
		{"join", "metrics", "", "s3"},
		{"join", "metrics", partA, ""},
		{"join", "metrics", partA},
		{"leave", "metrics", partA, "s3", "extra"},
		{"leave", "metrics", partA, "s3", "--force"},
		{"partitions"},
		{"servers", "extra"},
	} {
		out, err := admin(args...)
		if err == nil || exitCode(err) != 2 || strings.Contains(err.Error(), "\n") {
			t.Errorf("%v: %v (exit %d) printed %q, want a one-line usage error", args, err, exitCode(err), out)
		}
	}
	if got := f.take(); len(got) != 0 {
		t.Errorf("usage errors sent requests: %q", got)
	}
}

// TestAdminReplicationExitStatus runs join and leave as a process: an
// ambiguous prefix exits 1, a usage error 2, each with one line on stderr.
func TestAdminReplicationExitStatus(t *testing.T) {
	ts := httptest.NewServer(&fakeAPI{changeStatus: 200, changeBody: `{"txnid":"c","txnseq":1}`})
	defer ts.Close()
	tokenFile := writeFile(t, "token", "tok")
	for _, tc := range []struct {
		args []string
		code int
		want string
	}{
		{[]string{"admin", "join", "metrics", "1111", "s3"}, 1, "ambiguous"},
		{[]string{"admin", "leave", "metrics", "999", "s3"}, 1, "no partition"},
		{[]string{"admin", "partitions", "nope"}, 1, "table_not_found"},
		{[]string{"admin", "join", "metrics", "zz", "s3"}, 2, "PARTITION"},
		{[]string{"admin", "leave", "metrics", partA}, 2, "arg"},
	} {
		cmd := exec.Command(os.Args[0], append(append([]string{"-test.run=^$", "--"}, tc.args...),
			"--server", ts.URL, "--auth-token-file", tokenFile)...)
		cmd.Env = append(os.Environ(), "TSDB_TEST_MAIN=1")
		var stdout, stderr bytes.Buffer
		cmd.Stdout, cmd.Stderr = &stdout, &stderr
		err := cmd.Run()
		var ee *exec.ExitError
		if !errors.As(err, &ee) || ee.ExitCode() != tc.code {
			t.Errorf("%v: %v, want exit status %d (stderr %q)", tc.args, err, tc.code, stderr.String())
			continue
		}
		line := stderr.String()
		if strings.Count(line, "\n") != 1 || !strings.HasPrefix(line, "tsdb: ") || !strings.Contains(line, tc.want) {
			t.Errorf("%v: stderr %q, want one line naming %q", tc.args, line, tc.want)
		}
		if stdout.Len() != 0 {
			t.Errorf("%v: stdout %q, want nothing", tc.args, stdout.String())
		}
	}
}

// TestHumanSizes checks the units of the MOVED column of `tsdb admin
// partitions`.
func TestHumanSizes(t *testing.T) {
	for _, tc := range []struct {
		got, want string
	}{
		{humanBytes(0), "0B"}, {humanBytes(1023), "1023B"}, {humanBytes(1024), "1KiB"}, {humanBytes(1536), "1.5KiB"}, {humanBytes(1<<20 - 1), "1MiB"}, {humanCount(999_999), "1M"},
		{humanBytes(64 << 20), "64MiB"}, {humanBytes(3 << 40), "3TiB"}, {humanBytes(5 << 50), "5120TiB"},
		{humanCount(999), "999"}, {humanCount(1000), "1k"}, {humanCount(1250), "1.2k"}, {humanCount(2_500_000), "2.5M"},
		{snapshotsText(api.SnapshotCounts{}), "-"}, {snapshotsText(api.SnapshotCounts{Done: 2, Dropped: 1}), "2 done, 1 dropped"},
		{movedText(nil), "-"}, {movedText(map[string]api.Moved{"split": {Rows: 10, Bytes: 2048}}), "split 10/2KiB"},
	} {
		if tc.got != tc.want {
			t.Errorf("got %q, want %q", tc.got, tc.want)
		}
	}
}
