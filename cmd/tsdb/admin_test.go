package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/tsdb/tsdb/cluster/embedetcd"
	"github.com/tsdb/tsdb/http/api"
)

// TestMain lets a test run this test binary as the tsdb command itself
// (TSDB_TEST_MAIN=1, arguments after "--"), to check exit codes and stderr.
func TestMain(m *testing.M) {
	if os.Getenv("TSDB_TEST_MAIN") == "1" {
		for i, a := range os.Args {
			if a == "--" {
				os.Args = append([]string{"tsdb"}, os.Args[i+1:]...)
				break
			}
		}
		main()
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// writeFile writes content to a new file under the test's temp dir.
func writeFile(t *testing.T, name, content string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(p, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

// startServerCmd runs `tsdb server` in-process against a real embedded etcd
// with a bearer token and a cluster secret, and returns its URL. It stops
// when the test ends. Pre-split is off, so a new table has one partition
// (the tests split it themselves).
func startServerCmd(t *testing.T, tokenFile string) string {
	t.Helper()
	e, err := embedetcd.Start(embedetcd.Config{Dir: t.TempDir(), Fast: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(e.Close)
	secretFile := writeFile(t, "secret", "cluster-s3cret\n")
	port := freePort(t)
	ctx, cancel := context.WithCancel(context.Background())
	var out syncBuffer
	root := newRootCmd()
	root.SetOut(&out)
	root.SetArgs([]string{"server", "--id", "s1", "--listen", fmt.Sprintf("127.0.0.1:%d", port),
		"--data", t.TempDir(), "--etcd", e.Endpoint(), "--auth-token-file", tokenFile,
		"--cluster-secret-file", secretFile, "--log-level", "error", "--presplit=false"})
	done := make(chan error, 1)
	go func() { done <- root.ExecuteContext(ctx) }()
	t.Cleanup(func() {
		cancel()
		select {
		case err := <-done:
			if err != nil {
				t.Errorf("tsdb server stopped with %v", err)
			}
		case <-time.After(60 * time.Second):
			t.Error("tsdb server did not stop")
		}
	})
	waitForOutput(t, &out, done, "listening on", "tsdb server")
	return fmt.Sprintf("http://127.0.0.1:%d", port)
}

// TestAdminAgainstServer runs `tsdb admin tables` and `tsdb admin metadata`
// against a real server: human and --json output, a named txnid, an
// unknown table and txnid, a missing token, and $TSDB_SERVER.
func TestAdminAgainstServer(t *testing.T) {
	tokenFile := writeFile(t, "token", "s3cret\n")
	base := startServerCmd(t, tokenFile)
	req, _ := http.NewRequest("POST", base+"/api/v1/tables", strings.NewReader(`{"name":"metrics","replication_factor":1}`))
	req.Header.Set("Authorization", "Bearer s3cret")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 201 {
		t.Fatalf("create table: %d", resp.StatusCode)
	}
	// --cluster-secret-file reached the server: the internal API wants it,
	// and the bearer token does not replace it.
	if s := internalStatus(t, base, "", "s3cret"); s != http.StatusUnauthorized {
		t.Fatalf("internal API without the cluster secret: %d, want 401", s)
	}
	if s := internalStatus(t, base, "cluster-s3cret", ""); s != http.StatusOK {
		t.Fatalf("internal API with the cluster secret: %d, want 200", s)
	}
	admin := func(args ...string) (string, error) {
		return run(append(append([]string{"admin"}, args...), "--server", base, "--auth-token-file", tokenFile)...)
	}

	out, err := admin("tables", "--json")
	if err != nil {
		t.Fatalf("tables --json: %v\n%s", err, out)
	}
	var tables []api.TableConfig
	if err := json.Unmarshal([]byte(out), &tables); err != nil || len(tables) != 1 || tables[0].Name != "metrics" {
		t.Fatalf("tables --json: %v %+v\n%s", err, tables, out)
	}
	cfg := tables[0]

	out, err = admin("tables")
	if err != nil {
		t.Fatalf("tables: %v\n%s", err, out)
	}
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if len(lines) != 2 || strings.Join(strings.Fields(lines[0]), " ") != "NAME RF TXNSEQ TXNID METADATA SERVERS CREATED" {
		t.Fatalf("tables: want a header and one row:\n%s", out)
	}
	row := strings.Fields(lines[1])
	if len(row) != 6 || row[0] != "metrics" || row[1] != "1" || row[2] != fmt.Sprint(cfg.MetadataTxnSeq) ||
		row[3] != cfg.MetadataTxnID[:12] || row[4] != "s1" || row[5] != cfg.CreatedAt.UTC().Format(time.RFC3339) {
		t.Fatalf("tables row %q, config %+v", lines[1], cfg)
	}

	out, err = admin("metadata", "metrics", "--json")
	if err != nil {
		t.Fatalf("metadata --json: %v\n%s", err, out)
	}
	var md api.MetadataResponse
	if err := json.Unmarshal([]byte(out), &md); err != nil || md.Metadata == nil ||
		md.Metadata.TxnID != cfg.MetadataTxnID || md.Config.Name != "metrics" || len(md.Metadata.Partitions) != 1 {
		t.Fatalf("metadata --json: %v %+v\n%s", err, md, out)
	}
	p := md.Metadata.Partitions[0]

	for _, args := range [][]string{{"metadata", "metrics"}, {"metadata", "metrics", cfg.MetadataTxnID}} {
		out, err = admin(args...)
		if err != nil {
			t.Fatalf("%v: %v\n%s", args, err, out)
		}
		for _, want := range []string{`"name": "metrics"`, "METADATA:", "txnid:   " + cfg.MetadataTxnID,
			"parent:  -", p.ID.String(), "-inf", "+inf", "s1(" + p.Servers[0].PlacementID.String()[:8] + ")"} {
			if !strings.Contains(out, want) {
				t.Errorf("%v: output lacks %q:\n%s", args, want, out)
			}
		}
	}

	unknownTxn := strings.Repeat("0", 40)
	for _, tc := range []struct {
		args []string
		want []string
	}{
		{[]string{"metadata", "nope"}, []string{"nope", "404", "table_not_found"}},
		{[]string{"metadata", "metrics", unknownTxn}, []string{unknownTxn, "404", "not_found"}},
		{[]string{"metadata", "metrics", "xyz"}, []string{"xyz", "400"}},
		{[]string{"metadata", "Bad"}, []string{"Bad", "400", "invalid_table_name"}},
	} {
		out, err := admin(tc.args...)
		assertRequestError(t, tc.args, out, err, tc.want...)
	}
	// retention and drop-table (issue 18).
	if out, err := admin("retention", "metrics", "30d"); err != nil || !strings.Contains(out, "retention 720h0m0s") {
		t.Fatalf("retention: %v\n%s", err, out)
	}
	if out, err := admin("retention", "metrics", "soon"); err == nil || !strings.Contains(out+err.Error(), "soon") {
		t.Fatalf("retention soon: %v\n%s", err, out)
	}
	if out, err := admin("drop-table", "metrics"); err != nil || !strings.Contains(out, "table metrics dropped") {
		t.Fatalf("drop-table: %v\n%s", err, out)
	}
	out, err = admin("drop-table", "metrics")
	assertRequestError(t, []string{"drop-table", "metrics", "again"}, out, err, "404", "table_not_found")
	req, _ = http.NewRequest("POST", base+"/api/v1/tables", strings.NewReader(`{"name":"metrics","replication_factor":1}`))
	req.Header.Set("Authorization", "Bearer s3cret")
	if resp, err := http.DefaultClient.Do(req); err != nil || resp.StatusCode != 201 {
		t.Fatalf("re-create after drop-table: %v %v", err, resp)
	} else {
		resp.Body.Close()
	}

	// Without the token.
	out, err = run("admin", "tables", "--server", base)
	assertRequestError(t, []string{"tables", "no token"}, out, err, "401", "unauthorized")

	// $TSDB_SERVER stands in for --server; the flag wins over it.
	t.Setenv(serverEnv, base)
	if out, err := run("admin", "tables", "--auth-token-file", tokenFile); err != nil || !strings.Contains(out, "metrics") {
		t.Fatalf("with $%s: %v\n%s", serverEnv, err, out)
	}
	closed := fmt.Sprintf("http://127.0.0.1:%d", freePort(t))
	out, err = run("admin", "tables", "--auth-token-file", tokenFile, "--server", closed)
	assertRequestError(t, []string{"--server over $TSDB_SERVER"}, out, err, closed)
}

// internalStatus posts a discovery request for table metrics to the
// internal API and returns the status.
func internalStatus(t *testing.T, base, secret, token string) int {
	t.Helper()
	req, _ := http.NewRequest("POST", base+"/internal/discovery", strings.NewReader(`{"table":"metrics","server":"s9","replicas":[]}`))
	if secret != "" {
		req.Header.Set("X-TSDB-Cluster-Secret", secret)
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	return resp.StatusCode
}

// assertRequestError checks a failed admin command: a one-line error
// holding every want, exit code 1, and nothing printed on stdout.
func assertRequestError(t *testing.T, args []string, out string, err error, want ...string) {
	t.Helper()
	if err == nil {
		t.Errorf("%v: no error; printed\n%s", args, out)
		return
	}
	msg := err.Error()
	for _, w := range want {
		if !strings.Contains(msg, w) {
			t.Errorf("%v: error %q lacks %q", args, msg, w)
		}
	}
	if strings.Contains(msg, "\n") {
		t.Errorf("%v: error %q is not one line", args, msg)
	}
	if code := exitCode(err); code != 1 {
		t.Errorf("%v: exit code %d, want 1", args, code)
	}
	if out != "" {
		t.Errorf("%v: printed %q besides the error", args, out)
	}
}

// TestAdminUnreachableServer checks a server that is not there, or not an
// HTTP server of the right kind, gives one line naming the URL.
func TestAdminUnreachableServer(t *testing.T) {
	closed := fmt.Sprintf("http://127.0.0.1:%d", freePort(t))
	out, err := run("admin", "tables", "--server", closed)
	assertRequestError(t, []string{"refused"}, out, err, closed, "connection refused")

	// A server that never answers: the --timeout applies.
	hang := make(chan struct{})
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-hang:
		case <-r.Context().Done():
		}
	}))
	defer ts.Close()
	defer close(hang)
	out, err = run("admin", "tables", "--server", ts.URL, "--timeout", "200ms")
	assertRequestError(t, []string{"timeout"}, out, err, ts.URL, "200ms")

	// Something that is not tsdb: the status and the start of its body.
	other := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Error(w, "<html>\n<body>no such thing</body>", http.StatusBadGateway)
	}))
	defer other.Close()
	out, err = run("admin", "metadata", "metrics", "--server", other.URL)
	assertRequestError(t, []string{"not tsdb"}, out, err, "HTTP 502", "no such thing")
}

// TestAdminExitStatus runs the command as a process: a failed request
// exits 1 with one line on stderr, a usage error exits 2.
func TestAdminExitStatus(t *testing.T) {
	closed := fmt.Sprintf("http://127.0.0.1:%d", freePort(t))
	for _, tc := range []struct {
		args []string
		code int
		want string
	}{
		{[]string{"admin", "tables", "--server", closed}, 1, closed},
		{[]string{"admin", "tables", "--server", "ftp://x"}, 2, "--server"},
	} {
		cmd := exec.Command(os.Args[0], append([]string{"-test.run=^$", "--"}, tc.args...)...)
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

// TestAdminMetadataRendering checks the human output of a file with a split
// in progress, a joining server and an offline partition, against a canned
// answer.
func TestAdminMetadataRendering(t *testing.T) {
	const answer = `{"config":{"name":"metrics","metadata_txnid":"bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb","metadata_txnseq":3,
"metadata_checksum":"sha256:00","metadata_servers":["s1","s2"],"replication_factor":2,"partition_size_target":1073741824,
"retention":"0s","smear":{"enabled":true,"max_delay":"2m0s","keyrange_threshold":"1m0s"},"created_at":"2026-01-01T00:00:00Z"},
"metadata":{"table":"metrics","txnid":"bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb","txnseq":3,"parent_txnid":"aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa",
"partitions":[
{"id":"11111111-1111-1111-1111-111111111111","begin":null,"end":1767225600000000000,
 "servers":[{"server_id":"s1","placement_id":"aaaaaaaa-0000-0000-0000-000000000001"},{"server_id":"s2","placement_id":"bbbbbbbb-0000-0000-0000-000000000002"}],
 "joining":[{"server_id":"s3","placement_id":"cccccccc-0000-0000-0000-000000000003"}],
 "split":{"points":[1000],"children":[
   {"id":"22222222-2222-2222-2222-222222222222","begin":null,"end":1000,"servers":[{"server_id":"s1","placement_id":"dddddddd-0000-0000-0000-000000000004"}]},
   {"id":"33333333-3333-3333-3333-333333333333","begin":1000,"end":1767225600000000000,"servers":[{"server_id":"s2","placement_id":"eeeeeeee-0000-0000-0000-000000000005"}]}]}},
{"id":"44444444-4444-4444-4444-444444444444","begin":1767225600000000000,"end":null,
 "servers":[{"server_id":"s2","placement_id":"ffffffff-0000-0000-0000-000000000006"}],"joining":[],"offline":true}]}}`
	var gotPath string
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		gotPath = r.URL.RequestURI()
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, answer)
	}))
	defer ts.Close()
	out, err := run("admin", "metadata", "metrics", strings.Repeat("b", 40), "--server", ts.URL+"/")
	if err != nil {
		t.Fatal(err)
	}
	if want := "/api/v1/tables/metrics/metadata?txnid=" + strings.Repeat("b", 40); gotPath != want {
		t.Errorf("asked %s, want %s", gotPath, want)
	}
	for _, want := range []string{
		`"metadata_servers": [`, "txnseq:  3", "parent:  " + strings.Repeat("a", 40), "partitions: 2",
		"11111111-1111-1111-1111-111111111111  -inf                  2026-01-01T00:00:00Z",
		"s1(aaaaaaaa),s2(bbbbbbbb)", "s3(cccccccc)",
		"2 children: 22222222-2222-2222-2222-222222222222 [-inf, 1970-01-01T00:00:00.000001Z) s1(dddddddd) | " +
			"33333333-3333-3333-3333-333333333333 [1970-01-01T00:00:00.000001Z, 2026-01-01T00:00:00Z) s2(eeeeeeee)",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	last := strings.Fields(out[strings.LastIndex(strings.TrimSpace(out), "\n"):])
	if want := []string{"44444444-4444-4444-4444-444444444444", "2026-01-01T00:00:00Z", "+inf", "s2(ffffffff)", "-", "-", "yes"}; strings.Join(last, " ") != strings.Join(want, " ") {
		t.Errorf("last partition line %q, want %q", last, want)
	}

	out, err = run("admin", "metadata", "metrics", "--json", "--server", ts.URL)
	if err != nil {
		t.Fatal(err)
	}
	var a, b any
	if json.Unmarshal([]byte(answer), &a) != nil || json.Unmarshal([]byte(out), &b) != nil || !jsonSame(a, b) ||
		!strings.Contains(out, "\n  \"config\": {") {
		t.Errorf("--json is not the answer, indented:\n%s", out)
	}
}

func jsonSame(a, b any) bool {
	x, _ := json.Marshal(a)
	y, _ := json.Marshal(b)
	return bytes.Equal(x, y)
}

// TestAdminTablesEmpty checks an empty cluster prints a plain line, and
// --json an empty array.
func TestAdminTablesEmpty(t *testing.T) {
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.WriteString(w, `{"tables":[]}`)
	}))
	defer ts.Close()
	if out, err := run("admin", "tables", "--server", ts.URL); err != nil || out != "no tables\n" {
		t.Errorf("tables: %q %v", out, err)
	}
	if out, err := run("admin", "tables", "--json", "--server", ts.URL); err != nil || out != "[]\n" {
		t.Errorf("tables --json: %q %v", out, err)
	}
}
