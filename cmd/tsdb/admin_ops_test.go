package main

import (
	"bytes"
	"context"
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
	"time"

	"github.com/google/uuid"

	"github.com/tsdb/tsdb/http/api"
)

// opsFakeAPI is a canned tsdb API for the operator's commands. GET
// /api/v1/tables/metrics answers table; the health and METADATA GETs follow
// their scripts, one answer per GET (the last one repeating); every other
// request is recorded and answered from answers, keyed by method and last
// path element ("POST join", "DELETE drain"), or 404.
type opsFakeAPI struct {
	table    string
	health   []fakeAnswer
	metadata []fakeAnswer
	answers  map[string]fakeAnswer
	// onHealth, when set, is called with the count of health GETs so far
	// (from 1) before the answer is written.
	onHealth func(n int)

	mu struct {
		sync.Mutex
		healthReads   int
		metadataReads int
		requests      []string // "METHOD path?query body", but the health and METADATA GETs
	}
}

func (f *opsFakeAPI) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	a := f.answer(r, string(body))
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(a.status)
	io.WriteString(w, a.body)
}

func (f *opsFakeAPI) answer(r *http.Request, body string) fakeAnswer {
	if r.Method == "GET" && r.URL.Path == healthPath {
		f.mu.Lock()
		f.mu.healthReads++
		n := f.mu.healthReads
		f.mu.Unlock()
		if f.onHealth != nil {
			f.onHealth(n)
		}
		return f.health[min(n, len(f.health))-1]
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if r.Method == "GET" && r.URL.Path == "/api/v1/tables/metrics/metadata" {
		f.mu.metadataReads++
		return f.metadata[min(f.mu.metadataReads, len(f.metadata))-1]
	}
	f.mu.requests = append(f.mu.requests, strings.TrimSpace(r.Method+" "+r.URL.RequestURI()+" "+body))
	if r.Method == "GET" && r.URL.Path == "/api/v1/tables/metrics" {
		return fakeAnswer{200, f.table}
	}
	if a, ok := f.answers[r.Method+" "+r.URL.Path[strings.LastIndex(r.URL.Path, "/")+1:]]; ok {
		return a
	}
	return fakeAnswer{404, `{"error":{"code":"not_found","message":"http: no such endpoint: ` + r.URL.Path + `"}}`}
}

// take returns the requests recorded since the last call.
func (f *opsFakeAPI) take() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	r := f.mu.requests
	f.mu.requests = nil
	return r
}

// reads returns the counts of health and METADATA GETs so far.
func (f *opsFakeAPI) reads() (health, md int) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.mu.healthReads, f.mu.metadataReads
}

// startOpsFake serves f and returns a function running `tsdb admin ARGS`
// against it under ctx, with stdout and stderr apart. The poll interval of
// the waits is 1ms for the test.
func startOpsFake(t *testing.T, f *opsFakeAPI) func(ctx context.Context, args ...string) (string, string, error) {
	t.Helper()
	setPollInterval(t, time.Millisecond)
	ts := httptest.NewServer(f)
	t.Cleanup(ts.Close)
	return func(ctx context.Context, args ...string) (string, string, error) {
		root := newRootCmd()
		var out, errOut bytes.Buffer
		root.SetOut(&out)
		root.SetErr(&errOut)
		root.SetArgs(append(append([]string{"admin"}, args...), "--server", ts.URL))
		err := root.ExecuteContext(ctx)
		return out.String(), errOut.String(), err
	}
}

// setPollInterval sets opsPollInterval for the test.
func setPollInterval(t *testing.T, d time.Duration) {
	old := opsPollInterval
	opsPollInterval = d
	t.Cleanup(func() { opsPollInterval = old })
}

// healthOK answers a health GET with h.
func healthOK(h api.HealthResponse) fakeAnswer {
	b, err := json.Marshal(h)
	if err != nil {
		panic(err)
	}
	return fakeAnswer{200, string(b)}
}

// noQuorum is a failed read.
var noQuorum = fakeAnswer{503, `{"error":{"code":"unavailable","message":"metadata: no quorum"}}`}

// live is a live server holding n partition replicas.
func live(id string, n int) api.ServerHealth {
	return api.ServerHealth{ID: id, Addr: "127.0.0.1:8080", Live: true, Partitions: n}
}

// master is live(id, n) as the master.
func master(id string, n int) api.ServerHealth {
	s := live(id, n)
	s.Master = true
	return s
}

// draining is live(id, n) marked draining.
func draining(id string, n int) api.ServerHealth {
	s := live(id, n)
	s.Draining = true
	return s
}

// healthWith is a health answer with s1 (master) and s2 holding 4 each
// besides servers, balanced when no problem is given.
func healthWith(servers []api.ServerHealth, problems ...api.Problem) api.HealthResponse {
	return api.HealthResponse{Servers: append([]api.ServerHealth{master("s1", 4), live("s2", 4)}, servers...),
		Problems: problems, Mean: 4, Balanced: len(problems) == 0}
}

// assertFailed checks a failed command: a one-line error holding every
// want, exit status 1.
func assertFailed(t *testing.T, what string, err error, want ...string) {
	t.Helper()
	if err == nil {
		t.Errorf("%s: no error", what)
		return
	}
	if code := exitCode(err); code != 1 || strings.Contains(err.Error(), "\n") {
		t.Errorf("%s: %q (exit %d), want one line, exit status 1", what, err, code)
	}
	for _, w := range want {
		if !strings.Contains(err.Error(), w) {
			t.Errorf("%s: error %q lacks %q", what, err, w)
		}
	}
}

// sameLines compares outputs line by line, for a readable failure.
func sameLines(t *testing.T, what, got, want string) {
	t.Helper()
	if got != want {
		t.Errorf("%s:\n%s\nwant\n%s", what, got, want)
	}
}

var (
	partAID = uuid.MustParse(partA)
	partCID = uuid.MustParse(partC)
)

// staleProblems are three problems of a health answer.
var staleProblems = []api.Problem{
	{Kind: api.ProblemDraining, Server: "s3", Message: "marked draining since 2026-01-01T00:00:00Z"},
	{Kind: api.ProblemOffline, Table: "metrics", Partition: &partCID, Message: "taken offline\nby an operator"},
	{Kind: api.ProblemUnderReplicated, Table: "metrics", Partition: &partAID, Message: "2 live servers of 3"},
}

// TestAdminStale checks `tsdb admin stale`: a healthy cluster (exit status
// 0, one summary line), one with problems (a table, the summary, exit
// status 1), --json in both cases, and a failed request.
func TestAdminStale(t *testing.T) {
	healthy := healthWith([]api.ServerHealth{live("s3", 4), live("s4", 4), live("s5", 4)})
	sick := healthWith([]api.ServerHealth{draining("s3", 4), {ID: "s6", Partitions: 1}}, staleProblems...)
	sick.Servers[0].Master = false
	for _, tc := range []struct {
		name string
		h    api.HealthResponse
		out  string
	}{
		{"healthy", healthy, "no problems: 5 servers live, master s1, partitions balanced (mean 4.0)\n"},
		{"problems", sick, "KIND              TABLE    PARTITION  SERVER  MESSAGE\n" +
			"draining          -        -          s3      marked draining since 2026-01-01T00:00:00Z\n" +
			"offline           metrics  33333333   -       taken offline by an operator\n" +
			"under_replicated  metrics  11111111   -       2 live servers of 3\n" +
			"3 problems (1 draining, 1 offline, 1 under_replicated): 3 servers live, no master, partitions not balanced (mean 4.0)\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := &opsFakeAPI{health: []fakeAnswer{healthOK(tc.h)}}
			admin := startOpsFake(t, f)
			out, errOut, err := admin(context.Background(), "stale")
			sameLines(t, "stale", out, tc.out)
			if len(tc.h.Problems) == 0 && (err != nil || errOut != "") {
				t.Errorf("stale: %v (stderr %q), want exit status 0", err, errOut)
			}
			if len(tc.h.Problems) > 0 {
				assertFailed(t, "stale", err, "stale: 3 problems found")
			}

			out, _, jerr := admin(context.Background(), "stale", "--json")
			var got api.HealthResponse
			if json.Unmarshal([]byte(out), &got) != nil || !jsonSame(got, tc.h) || !strings.HasPrefix(out, "{\n  \"servers\": [") {
				t.Errorf("stale --json is not the answer, indented:\n%s", out)
			}
			if exitCode(jerr) != exitCode(err) || (err == nil) != (jerr == nil) {
				t.Errorf("stale --json: %v, stale: %v: want the same exit status", jerr, err)
			}
		})
	}

	f := &opsFakeAPI{health: []fakeAnswer{noQuorum}}
	out, _, err := startOpsFake(t, f)(context.Background(), "stale")
	assertRequestError(t, []string{"stale", "503"}, out, err, "no quorum", "(HTTP 503, unavailable)")
}

// TestAdminStaleExitStatus runs stale as a process: exit status 0 and the
// summary for a healthy cluster; 1, the table on stdout and a single short
// line on stderr when there are problems.
func TestAdminStaleExitStatus(t *testing.T) {
	for _, tc := range []struct {
		h      api.HealthResponse
		code   int
		stdout []string
		stderr string
	}{
		{healthWith(nil), 0, []string{"no problems: 2 servers live"}, ""},
		{healthWith(nil, staleProblems...), 1, []string{"KIND", "under_replicated", "3 problems (1 draining"}, "tsdb: stale: 3 problems found\n"},
	} {
		ts := httptest.NewServer(&opsFakeAPI{health: []fakeAnswer{healthOK(tc.h)}})
		cmd := exec.Command(os.Args[0], "-test.run=^$", "--", "admin", "stale", "--server", ts.URL)
		cmd.Env = append(os.Environ(), "TSDB_TEST_MAIN=1")
		var stdout, stderr bytes.Buffer
		cmd.Stdout, cmd.Stderr = &stdout, &stderr
		err := cmd.Run()
		ts.Close()
		code := 0
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			code = ee.ExitCode()
		} else if err != nil {
			t.Fatal(err)
		}
		if code != tc.code || stderr.String() != tc.stderr {
			t.Errorf("exit status %d, stderr %q; want %d, %q", code, stderr.String(), tc.code, tc.stderr)
		}
		for _, w := range tc.stdout {
			if !strings.Contains(stdout.String(), w) {
				t.Errorf("stdout lacks %q:\n%s", w, stdout.String())
			}
		}
	}
}

// drainAnswers answers the drain and undrain of s3.
var drainAnswers = map[string]fakeAnswer{
	"POST drain":   {200, `{"server":"s3","draining":true,"since":"2026-01-01T00:00:00Z"}`},
	"DELETE drain": {200, `{"server":"s3","draining":false}`},
}

const drainStarted = "s3 is draining since 2026-01-01T00:00:00Z: the master moves its partition replicas to other servers\n"

// TestAdminDrainWaits checks `tsdb admin drain`: the request, a progress
// line each time the count (or a failed read, or the master) changes, the
// final line; then --json (one object on stdout, progress on stderr) and
// --no-wait.
func TestAdminDrainWaits(t *testing.T) {
	noMaster := healthWith([]api.ServerHealth{draining("s3", 5)})
	noMaster.Servers[0].Master = false
	script := []fakeAnswer{
		healthOK(healthWith([]api.ServerHealth{draining("s3", 7)})),
		healthOK(healthWith([]api.ServerHealth{draining("s3", 7)})),
		healthOK(healthWith([]api.ServerHealth{draining("s3", 5)})),
		noQuorum,
		healthOK(noMaster),
		healthOK(healthWith([]api.ServerHealth{draining("s3", 0)})),
	}
	f := &opsFakeAPI{health: script, answers: drainAnswers}
	admin := startOpsFake(t, f)
	out, errOut, err := admin(context.Background(), "drain", "s3")
	if err != nil || errOut != "" {
		t.Fatalf("drain: %v (stderr %q)\n%s", err, errOut, out)
	}
	sameLines(t, "drain", out, drainStarted+
		"s3: 7 partition replicas left\n"+
		"s3: 5 partition replicas left\n"+
		"waiting: cannot read the cluster health: metadata: no quorum (HTTP 503, unavailable)\n"+
		"s3: 5 partition replicas left; no master is elected: nothing moves until one is\n"+
		"s3 drained: it holds no partition replicas and can be stopped; 'tsdb admin undrain s3' undoes the mark\n")
	if got := f.take(); len(got) != 1 || got[0] != "POST /api/v1/servers/s3/drain {}" {
		t.Errorf("requests %q", got)
	}
	if n, _ := f.reads(); n != len(script) {
		t.Errorf("%d health reads, want %d", n, len(script))
	}

	f = &opsFakeAPI{health: script[2:], answers: drainAnswers}
	out, errOut, err = startOpsFake(t, f)(context.Background(), "drain", "s3", "--json")
	var res struct {
		Drain  api.DrainResponse `json:"drain"`
		Server api.ServerHealth  `json:"server"`
	}
	if err != nil || json.Unmarshal([]byte(out), &res) != nil || !res.Drain.Draining || res.Drain.Server != "s3" ||
		res.Server.ID != "s3" || res.Server.Partitions != 0 || !res.Server.Draining {
		t.Errorf("drain --json: %v %+v\n%s", err, res, out)
	}
	if !strings.HasPrefix(errOut, drainStarted+"s3: 5 partition replicas left\n") {
		t.Errorf("drain --json: stderr %q, want the progress lines", errOut)
	}

	f = &opsFakeAPI{health: script, answers: drainAnswers}
	out, _, err = startOpsFake(t, f)(context.Background(), "drain", "s3", "--no-wait")
	sameLines(t, "drain --no-wait", out, strings.TrimSuffix(drainStarted, "\n")+
		"; follow it with 'tsdb admin stale' ('tsdb admin undrain s3' cancels it)\n")
	if n, _ := f.reads(); err != nil || n != 0 {
		t.Errorf("drain --no-wait: %v, %d health reads", err, n)
	}
}

// TestAdminDrainFails checks the ways a drain ends with exit status 1: an
// unknown server (no wait), a server missing from the health answer, a
// mark removed during the wait, --wait-timeout, and an interrupt.
func TestAdminDrainFails(t *testing.T) {
	holding := healthOK(healthWith([]api.ServerHealth{draining("s3", 7)}))
	undrained := healthWith([]api.ServerHealth{live("s3", 3)})
	for _, tc := range []struct {
		name    string
		answers map[string]fakeAnswer
		health  fakeAnswer
		args    []string
		// interruptAt cancels the command's context at that health read.
		interruptAt int
		want        []string
	}{
		{name: "unknown server", health: holding, args: []string{"drain", "s9"},
			answers: map[string]fakeAnswer{"POST drain": {404, `{"error":{"code":"server_not_found","message":"http: server \"s9\" not found"}}`}},
			want:    []string{`server "s9" not found`, "(HTTP 404, server_not_found)"}},
		{name: "missing from health", health: healthOK(healthWith(nil)), args: []string{"drain", "s3"},
			want: []string{"drain of s3", "missing from the cluster health", "tsdb admin undrain s3"}},
		{name: "undrained", health: healthOK(undrained), args: []string{"drain", "s3"},
			want: []string{"no longer marked draining", "still holds 3 partition replicas"}},
		{name: "timeout", health: holding, args: []string{"drain", "s3", "--wait-timeout", "200ms"},
			want: []string{"drain of s3: not finished after 200ms (--wait-timeout)", "goes on in the background", "tsdb admin stale"}},
		{name: "interrupt", health: holding, args: []string{"drain", "s3"}, interruptAt: 3,
			want: []string{"drain of s3: wait interrupted (last seen: s3: 7 partition replicas left)", "goes on in the background"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			f := &opsFakeAPI{health: []fakeAnswer{tc.health}, answers: drainAnswers}
			if tc.answers != nil {
				f.answers = tc.answers
			}
			if tc.interruptAt > 0 {
				f.onHealth = func(n int) {
					if n == tc.interruptAt {
						cancel()
					}
				}
			}
			out, _, err := startOpsFake(t, f)(ctx, tc.args...)
			assertFailed(t, tc.name, err, tc.want...)
			if n, _ := f.reads(); tc.answers != nil && (out != "" || n != 0) {
				t.Errorf("a refused drain printed %q and read the health %d times", out, n)
			}
		})
	}
}

// TestAdminUndrain checks `tsdb admin undrain`: the DELETE, the output,
// --json and a refusal.
func TestAdminUndrain(t *testing.T) {
	f := &opsFakeAPI{answers: drainAnswers}
	admin := startOpsFake(t, f)
	out, _, err := admin(context.Background(), "undrain", "s3")
	if err != nil || out != "s3 is no longer draining\n" {
		t.Errorf("undrain: %v %q", err, out)
	}
	if got := f.take(); len(got) != 1 || got[0] != "DELETE /api/v1/servers/s3/drain" {
		t.Errorf("requests %q", got)
	}
	out, _, err = admin(context.Background(), "undrain", "s3", "--json")
	if err != nil || out != "{\n  \"server\": \"s3\",\n  \"draining\": false\n}\n" {
		t.Errorf("undrain --json: %v %q", err, out)
	}
	f.answers = map[string]fakeAnswer{"DELETE drain": {404, `{"error":{"code":"server_not_found","message":"http: server \"s9\" not found"}}`}}
	out, _, err = admin(context.Background(), "undrain", "s9")
	assertRequestError(t, []string{"undrain", "s9"}, out, err, `server "s9" not found`, "server_not_found")
}

// movePart is a METADATA partition entry of partB ([1000, 2000)) with the
// servers and joining servers given.
func movePart(id string, servers, joining []string) string {
	begin, end := int64(1000), int64(2000)
	p := api.Partition{ID: uuid.MustParse(id), Begin: &begin, End: &end,
		Servers: movePlacements(id, servers), Joining: movePlacements(id, joining)}
	b, err := json.Marshal(p)
	if err != nil {
		panic(err)
	}
	return string(b)
}

func movePlacements(id string, servers []string) []api.Placement {
	ps := make([]api.Placement, len(servers))
	for i, s := range servers {
		ps[i] = api.Placement{ServerID: s, PlacementID: uuid.NewMD5(uuid.NameSpaceOID, []byte(id+s))}
	}
	return ps
}

// moveTable answers GET /api/v1/tables/metrics for the moves: partB is
// served by s1 and s2, and s3 is joining it.
var moveTable = `{"config":` + cannedConfig + `,"partitions":[` + partAPart + `,` +
	movePart(partB, []string{"s1", "s2"}, []string{"s3"}) + `,` + partCPart + `]}`

// moveAnswers answer the join and leave of a move.
var moveAnswers = map[string]fakeAnswer{
	"POST join":  {200, `{"txnid":"` + strings.Repeat("e", 40) + `","txnseq":5}`},
	"POST leave": {200, `{"txnid":"` + strings.Repeat("f", 40) + `","txnseq":7}`},
}

// METADATA answers of a move of partB from s1 to s4.
var (
	moveBefore  = fakeAnswer{200, metadataAnswer(4, partAPart, movePart(partB, []string{"s1", "s2"}, []string{"s3"}), partCPart)}
	moveJoining = fakeAnswer{200, metadataAnswer(5, partAPart, movePart(partB, []string{"s1", "s2"}, []string{"s3", "s4"}), partCPart)}
	moveServes  = fakeAnswer{200, metadataAnswer(6, partAPart, movePart(partB, []string{"s1", "s2", "s4"}, []string{"s3"}), partCPart)}
)

const (
	moveJoinLine = "JOIN_SERVER s4, partition " + partB + " of metrics: committed txnseq 5; s1 is removed once s4 has caught up\n"
	moveJoinPost = "POST /api/v1/tables/metrics/partitions/" + partB + `/join {"server":"s4"}`
)

// TestAdminMove checks `tsdb admin move`: the join, the wait with its
// progress lines, then the leave, in that order and with their bodies;
// the same with --json; a FROM that already left; and --no-wait.
func TestAdminMove(t *testing.T) {
	f := &opsFakeAPI{table: moveTable, answers: moveAnswers,
		metadata: []fakeAnswer{moveBefore, moveJoining, noQuorum, moveJoining, moveServes}}
	admin := startOpsFake(t, f)
	out, errOut, err := admin(context.Background(), "move", "metrics", "11112", "s1", "s4")
	if err != nil || errOut != "" {
		t.Fatalf("move: %v (stderr %q)\n%s", err, errOut, out)
	}
	joining := "waiting: s4 is joining partition 11112222 of metrics, catching up from s1,s2\n"
	sameLines(t, "move", out, moveJoinLine+
		"waiting: the METADATA read is at txnseq 4, before the join's 5\n"+
		joining+
		"waiting: cannot read the METADATA: metadata: no quorum (HTTP 503, unavailable)\n"+
		joining+
		"s4 serves partition "+partB+" of metrics (txnseq 6)\n"+
		"moved partition "+partB+" of metrics from s1 to s4: REMOVE_SERVER s1 committed txnseq 7; "+
		"s1 pushes what the others lack, then drops its copy\n")
	want := []string{"GET /api/v1/tables/metrics", "GET /api/v1/tables/metrics", moveJoinPost,
		"POST /api/v1/tables/metrics/partitions/" + partB + `/leave {"server":"s1"}`}
	if got := f.take(); strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("requests\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}

	f = &opsFakeAPI{table: moveTable, answers: moveAnswers, metadata: []fakeAnswer{moveJoining, moveServes}}
	out, errOut, err = startOpsFake(t, f)(context.Background(), "move", "metrics", partB, "s1", "s4", "--json")
	if err != nil || out != `{
  "table": "metrics",
  "partition": "`+partB+`",
  "from": "s1",
  "to": "s4",
  "txnseq": 7,
  "complete": true
}
` {
		t.Errorf("move --json: %v\n%s", err, out)
	}
	if !strings.HasPrefix(errOut, moveJoinLine+joining) {
		t.Errorf("move --json: stderr %q, want the progress lines", errOut)
	}

	// s1 left meanwhile (the master removed it): nothing to remove.
	fromGone := fakeAnswer{200, metadataAnswer(6, partAPart, movePart(partB, []string{"s2", "s4"}, nil), partCPart)}
	f = &opsFakeAPI{table: moveTable, answers: moveAnswers, metadata: []fakeAnswer{fromGone}}
	out, _, err = startOpsFake(t, f)(context.Background(), "move", "metrics", partB, "s1", "s4")
	sameLines(t, "move, FROM gone", out, moveJoinLine+"s4 serves partition "+partB+" of metrics (txnseq 6); s1 already left it: nothing to remove\n"+
		"moved partition "+partB+" of metrics from s1 to s4 (txnseq 6)\n")
	if got := f.take(); err != nil || len(got) != 2 || got[1] != moveJoinPost {
		t.Errorf("move, FROM gone: %v, requests %q", err, got)
	}

	f = &opsFakeAPI{table: moveTable, answers: moveAnswers, metadata: []fakeAnswer{moveServes}}
	out, _, err = startOpsFake(t, f)(context.Background(), "move", "metrics", "11112", "s1", "s4", "--no-wait")
	sameLines(t, "move --no-wait", out, "JOIN_SERVER s4, partition "+partB+" of metrics: committed txnseq 5; once s4 serves it "+
		"(listed among its servers by 'tsdb admin partitions metrics'), run 'tsdb admin leave metrics 11112222 s1' to finish the move\n")
	if _, n := f.reads(); err != nil || n != 0 || len(f.take()) != 3 {
		t.Errorf("move --no-wait: %v, %d METADATA reads", err, n)
	}
	out, _, err = startOpsFake(t, f)(context.Background(), "move", "metrics", "11112", "s1", "s4", "--no-wait", "--json")
	var res moveResult
	if err != nil || json.Unmarshal([]byte(out), &res) != nil || res.TxnSeq != 5 || res.Complete || res.To != "s4" {
		t.Errorf("move --no-wait --json: %v %+v\n%s", err, res, out)
	}
}

// TestAdminMoveRefused checks that a FROM that is not a server of the
// partition, or a TO that already holds it, is refused (exit status 1)
// before any change.
func TestAdminMoveRefused(t *testing.T) {
	f := &opsFakeAPI{table: moveTable, answers: moveAnswers, metadata: []fakeAnswer{moveServes}}
	admin := startOpsFake(t, f)
	for _, tc := range []struct {
		from, to string
		want     []string
	}{
		{"s9", "s4", []string{"s9 is not a server of partition " + partB + " of metrics (servers s1,s2, joining s3)"}},
		{"s3", "s4", []string{"s3 is not a server of partition", "nothing to move"}},
		{"s1", "s2", []string{"s2 already serves partition " + partB, "choose another TO"}},
		{"s1", "s3", []string{"s3 is already joining partition " + partB, "'tsdb admin leave metrics 11112222 s1'"}},
	} {
		out, _, err := admin(context.Background(), "move", "metrics", "11112", tc.from, tc.to)
		assertRequestError(t, []string{"move", tc.from, tc.to}, out, err, tc.want...)
	}
	out, _, err := admin(context.Background(), "move", "metrics", "66666666-6666-6666-6666-666666666666", "s1", "s4")
	assertRequestError(t, []string{"move", "unknown"}, out, err, "no current partition 66666666-")
	for _, r := range f.take() {
		if r != "GET /api/v1/tables/metrics" {
			t.Errorf("a refused move sent %q", r)
		}
	}
}

// TestAdminMoveStops checks the waits that end with exit status 1 and
// FROM not removed: the partition vanishes (split), TO's join is undone,
// --wait-timeout; and a refused leave after the join.
func TestAdminMoveStops(t *testing.T) {
	splitDone := fakeAnswer{200, metadataAnswer(6, partAPart, child1Part, child2Part, partCPart)}
	undone := fakeAnswer{200, metadataAnswer(6, partAPart, movePart(partB, []string{"s1", "s2"}, nil), partCPart)}
	refusedLeave := map[string]fakeAnswer{"POST join": moveAnswers["POST join"],
		"POST leave": {400, `{"error":{"code":"invalid_op","message":"metadata: invalid op: fewer servers than the replication factor"}}`}}
	for _, tc := range []struct {
		name     string
		metadata []fakeAnswer
		answers  map[string]fakeAnswer
		timeout  string
		want     []string
		leave    bool // the leave was sent
	}{
		{name: "vanished", metadata: []fakeAnswer{moveJoining, splitDone},
			want: []string{"partition is gone at txnseq 6 (split, or dropped by retention) before s4 served it", "s1 was not removed",
				"tsdb admin partitions metrics"}},
		{name: "join undone", metadata: []fakeAnswer{moveJoining, undone},
			want: []string{"s4 is no longer joining it at txnseq 6", "s1 was not removed"}},
		{name: "timeout", metadata: []fakeAnswer{moveJoining}, timeout: "200ms",
			want: []string{"move of partition " + partB + " of metrics from s1 to s4: not finished after 200ms (--wait-timeout)",
				"s1 was not removed", "run 'tsdb admin leave metrics 11112222 s1'"}},
		{name: "leave refused", metadata: []fakeAnswer{moveServes}, answers: refusedLeave, leave: true,
			want: []string{"s4 serves partition " + partB + " of metrics, but removing s1 failed", "(HTTP 400, invalid_op)",
				"retry with 'tsdb admin leave metrics 11112222 s1'"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := &opsFakeAPI{table: moveTable, answers: moveAnswers, metadata: tc.metadata}
			if tc.answers != nil {
				f.answers = tc.answers
			}
			args := []string{"move", "metrics", partB, "s1", "s4"}
			if tc.timeout != "" {
				args = append(args, "--wait-timeout", tc.timeout)
			}
			out, _, err := startOpsFake(t, f)(context.Background(), args...)
			assertFailed(t, tc.name, err, tc.want...)
			if !strings.HasPrefix(out, moveJoinLine) {
				t.Errorf("printed %q, want the join line first", out)
			}
			got := f.take()
			if len(got) < 2 || got[1] != moveJoinPost || (len(got) == 3) != tc.leave {
				t.Errorf("requests %q (leave sent: want %v)", got, tc.leave)
			}
		})
	}
}

// TestAdminOfflineOnline checks `tsdb admin offline` and `online`: the
// prefix resolution, the path and body, the output, --json and a refusal.
func TestAdminOfflineOnline(t *testing.T) {
	change := fakeAnswer{200, `{"txnid":"` + strings.Repeat("a", 40) + `","txnseq":12}`}
	f := &opsFakeAPI{table: cannedTable, answers: map[string]fakeAnswer{"POST offline": change, "POST online": change}}
	admin := startOpsFake(t, f)
	base := "POST /api/v1/tables/metrics/partitions/"
	for _, tc := range []struct {
		args     []string
		requests []string
		out      string
	}{
		{[]string{"offline", "metrics", "3"}, []string{"GET /api/v1/tables/metrics", base + partC + "/offline {}"},
			"partition 33333333 of metrics is offline (txnseq 12): inserts into its range and queries of it fail with " +
				"503 partition_offline until 'tsdb admin online metrics 33333333'\n"},
		{[]string{"online", "metrics", partC}, []string{base + partC + "/online {}"},
			"partition 33333333 of metrics is online (txnseq 12): inserts into its range and queries of it are served again\n"},
		{[]string{"offline", "metrics", "11112", "--json"}, []string{"GET /api/v1/tables/metrics", base + partB + "/offline {}"},
			"{\n  \"txnid\": \"" + strings.Repeat("a", 40) + "\",\n  \"txnseq\": 12\n}\n"},
	} {
		out, _, err := admin(context.Background(), tc.args...)
		if err != nil || out != tc.out {
			t.Errorf("%v: %v\n%q, want\n%q", tc.args, err, out, tc.out)
		}
		if got := f.take(); strings.Join(got, "\n") != strings.Join(tc.requests, "\n") {
			t.Errorf("%v: requests\n%s\nwant\n%s", tc.args, strings.Join(got, "\n"), strings.Join(tc.requests, "\n"))
		}
	}
	f.answers["POST online"] = fakeAnswer{400, `{"error":{"code":"invalid_op","message":"metadata: invalid op: partition is splitting"}}`}
	out, _, err := admin(context.Background(), "online", "metrics", partC)
	assertRequestError(t, []string{"online", "refused"}, out, err, "partition is splitting", "(HTTP 400, invalid_op)")
	out, _, err = admin(context.Background(), "offline", "metrics", "1111")
	assertRequestError(t, []string{"offline", "ambiguous"}, out, err, "ambiguous")
}

// TestAdminRebalance checks `tsdb admin rebalance`: the request, the
// per-server counts each time they change, "balanced"; --json; --no-wait;
// and --wait-timeout.
func TestAdminRebalance(t *testing.T) {
	counts := func(balanced bool, servers ...api.ServerHealth) fakeAnswer {
		return healthOK(api.HealthResponse{Servers: servers, Mean: 4, Balanced: balanced})
	}
	script := []fakeAnswer{
		counts(false, master("s1", 6), live("s2", 2), draining("s3", 1), api.ServerHealth{ID: "s9"}),
		counts(false, master("s1", 6), live("s2", 2), draining("s3", 1)),
		noQuorum,
		counts(false, master("s1", 5), live("s2", 3), draining("s3", 0), api.ServerHealth{ID: "s8", Partitions: 1}),
		counts(true, master("s1", 4), live("s2", 4), draining("s3", 0)),
	}
	answers := map[string]fakeAnswer{"POST rebalance": {202, `{"requested_at":"2026-01-01T00:00:00Z"}`}}
	f := &opsFakeAPI{health: script, answers: answers}
	out, errOut, err := startOpsFake(t, f)(context.Background(), "rebalance")
	if err != nil || errOut != "" {
		t.Fatalf("rebalance: %v (stderr %q)\n%s", err, errOut, out)
	}
	started := "rebalance requested at 2026-01-01T00:00:00Z: the master moves partition replicas until every live, " +
		"non-draining server holds within one of the mean"
	sameLines(t, "rebalance", out, started+"\n"+
		"s1=6 s2=2 s3=1(draining) (mean 4.0)\n"+
		"waiting: cannot read the cluster health: metadata: no quorum (HTTP 503, unavailable)\n"+
		"s1=5 s2=3 s3=0(draining) s8=1(not live) (mean 4.0)\n"+
		"s1=4 s2=4 s3=0(draining) (mean 4.0)\n"+
		"balanced: every live, non-draining server holds within one of the mean (4.0)\n")
	if got := f.take(); len(got) != 1 || got[0] != "POST /api/v1/cluster/rebalance {}" {
		t.Errorf("requests %q", got)
	}

	f = &opsFakeAPI{health: script[3:], answers: answers}
	out, errOut, err = startOpsFake(t, f)(context.Background(), "rebalance", "--json")
	var res rebalanceResult
	if err != nil || json.Unmarshal([]byte(out), &res) != nil || res.Health == nil || !res.Health.Balanced ||
		len(res.Health.Servers) != 3 || res.Rebalance.RequestedAt.IsZero() {
		t.Errorf("rebalance --json: %v %+v\n%s", err, res, out)
	}
	if !strings.HasPrefix(errOut, started+"\ns1=5 s2=3") {
		t.Errorf("rebalance --json: stderr %q", errOut)
	}

	f = &opsFakeAPI{health: script, answers: answers}
	out, _, err = startOpsFake(t, f)(context.Background(), "rebalance", "--no-wait")
	if n, _ := f.reads(); err != nil || n != 0 || out != started+"; follow it with 'tsdb admin stale'\n" {
		t.Errorf("rebalance --no-wait: %v, %d health reads\n%s", err, n, out)
	}

	noMaster := counts(false, live("s1", 6), live("s2", 2))
	f = &opsFakeAPI{health: []fakeAnswer{noMaster}, answers: answers}
	out, _, err = startOpsFake(t, f)(context.Background(), "rebalance", "--wait-timeout", "200ms")
	assertFailed(t, "rebalance timeout", err, "rebalance: not finished after 200ms (--wait-timeout)",
		"goes on in the background")
	if !strings.HasPrefix(out, started+"\n") {
		t.Errorf("rebalance timeout: printed %q", out)
	}
}

// TestAdminOpsUsageErrors checks that bad arguments and flags of the
// operator's commands are one-line usage errors (exit status 2) found
// before any request.
func TestAdminOpsUsageErrors(t *testing.T) {
	f := &opsFakeAPI{table: moveTable, answers: moveAnswers}
	admin := startOpsFake(t, f)
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"stale", "extra"}, "extra"},
		{[]string{"drain"}, "arg"},
		{[]string{"drain", " "}, "SERVER"},
		{[]string{"drain", "s3", "--wait-timeout", "0s"}, "--wait-timeout 0s"},
		{[]string{"undrain", ""}, "SERVER"},
		{[]string{"move", "metrics", "11112", "s1"}, "arg"},
		{[]string{"move", "metrics", "11112", "s1", "s1"}, `FROM and TO are both "s1"`},
		{[]string{"move", "metrics", "11112", "", "s4"}, "FROM"},
		{[]string{"move", "metrics", "zz", "s1", "s4"}, "PARTITION"},
		{[]string{"move", "metrics", "11112", "s1", "s4", "--wait-timeout", "-1s"}, "--wait-timeout"},
		{[]string{"offline", "metrics"}, "arg"},
		{[]string{"online", "metrics", "xyz!"}, "PARTITION"},
		{[]string{"rebalance", "now"}, "now"},
		{[]string{"rebalance", "--wait-timeout", "0s"}, "--wait-timeout"},
	} {
		out, _, err := admin(context.Background(), tc.args...)
		if err == nil || exitCode(err) != 2 || strings.Contains(err.Error(), "\n") || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%v: %v (exit %d) printed %q, want a one-line usage error naming %q", tc.args, err, exitCode(err), out, tc.want)
		}
	}
	if got := f.take(); len(got) != 0 {
		t.Errorf("usage errors sent requests: %q", got)
	}
}

// TestAdminOpsHelp checks each operator command's --help says what it
// does through which API path, and what its exit status means.
func TestAdminOpsHelp(t *testing.T) {
	for cmd, path := range map[string]string{
		"stale": "/api/v1/cluster/health", "drain": "/api/v1/servers/{id}/drain", "undrain": "/api/v1/servers/{id}/drain",
		"move": "/partitions/{p}/join", "offline": "/partitions/{p}/offline", "online": "/partitions/{p}/online",
		"rebalance": "/api/v1/cluster/rebalance",
	} {
		out, err := run("admin", cmd, "--help")
		if err != nil || !strings.Contains(out, path) || !strings.Contains(out, "xit status") {
			t.Errorf("admin %s --help: %v; want %s and the exit status:\n%s", cmd, err, path, out)
		}
	}
	out, err := run("admin", "--help")
	for _, cmd := range []string{"stale", "drain", "undrain", "move", "offline", "online", "rebalance"} {
		if err != nil || !strings.Contains(out, "\n  "+cmd+" ") {
			t.Errorf("admin --help does not list %s: %v\n%s", cmd, err, out)
		}
	}
}

// TestAdminServersDraining checks the ROLE column of `tsdb admin servers`
// for a draining server, master or not.
func TestAdminServersDraining(t *testing.T) {
	var buf bytes.Buffer
	err := printServers(&buf, []api.ServerInfo{{ID: "s1", Master: true, Draining: true}, {ID: "s2", Draining: true},
		{ID: "s3", Master: true}, {ID: "s4"}})
	var roles []string
	for _, l := range strings.Split(strings.TrimSpace(buf.String()), "\n")[1:] {
		roles = append(roles, strings.Fields(l)[1])
	}
	if err != nil || strings.Join(roles, " ") != "master,draining draining master -" {
		t.Errorf("roles %q (%v)\n%s", roles, err, buf.String())
	}
}
