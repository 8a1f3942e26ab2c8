package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/tsdb/tsdb/cluster/embedetcd"
	"github.com/tsdb/tsdb/http/api"
)

func run(args ...string) (string, error) {
	root := newRootCmd()
	var out bytes.Buffer
	root.SetOut(&out)
	root.SetErr(&out)
	root.SetArgs(args)
	err := root.ExecuteContext(context.Background())
	return out.String(), err
}

// TestHelpDocumentsEveryFlag checks that `tsdb --help` lists the commands and
// each command's --help lists every one of its flags with a description.
func TestHelpDocumentsEveryFlag(t *testing.T) {
	out, err := run("--help")
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []string{"server", "dev", "admin"} {
		if !strings.Contains(out, c) {
			t.Errorf("tsdb --help does not mention %q:\n%s", c, out)
		}
	}
	var walk func(cmd *cobra.Command)
	walk = func(cmd *cobra.Command) {
		for _, sub := range cmd.Commands() {
			args := append(strings.Fields(sub.CommandPath())[1:], "--help")
			out, err := run(args...)
			if err != nil {
				t.Fatalf("%s: %v", sub.CommandPath(), err)
			}
			for _, grand := range sub.Commands() {
				if !strings.Contains(out, grand.Name()) {
					t.Errorf("%s --help does not mention %q", sub.CommandPath(), grand.Name())
				}
			}
			check := func(f *pflag.Flag) {
				if f.Usage == "" {
					t.Errorf("%s --%s has no description", sub.CommandPath(), f.Name)
				}
				if !strings.Contains(out, "--"+f.Name) {
					t.Errorf("%s --help does not list --%s", sub.CommandPath(), f.Name)
				}
			}
			sub.LocalFlags().VisitAll(check)
			sub.InheritedFlags().VisitAll(check)
			walk(sub)
		}
	}
	walk(newRootCmd())
}

// TestBadFlagsAreOneLineErrors checks a bad flag value gives one clear line.
func TestBadFlagsAreOneLineErrors(t *testing.T) {
	emptyFile := filepath.Join(t.TempDir(), "empty")
	if err := os.WriteFile(emptyFile, []byte(" \n"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"dev", "--servers", "0"}, "--servers"},
		{[]string{"dev", "--servers", "many"}, "--servers"},
		{[]string{"dev", "--port", "70000"}, "--port"},
		{[]string{"dev", "--etcd-port", "8080"}, "--etcd-port"},
		{[]string{"dev", "--log-level", "loud"}, "--log-level"},
		{[]string{"dev", "--auth-token-file", "/nonexistent/token"}, "--auth-token-file"},
		{[]string{"dev", "--cluster-secret-file", "/nonexistent/secret"}, "--cluster-secret-file"},
		{[]string{"dev", "--cluster-secret-file", emptyFile}, "--cluster-secret-file"},
		{[]string{"server", "--id", "s1", "--data", "x", "--cluster-secret-file", emptyFile}, "--cluster-secret-file"},
		{[]string{"admin", "tables", "--server", "127.0.0.1:8080"}, "--server"},
		{[]string{"admin", "tables", "--timeout", "0s"}, "--timeout"},
		{[]string{"admin", "tables", "--auth-token-file", emptyFile}, "--auth-token-file"},
		{[]string{"admin", "metadata"}, "arg"},
		{[]string{"admin", "tables", "extra"}, "extra"},
		{[]string{"server", "--data", "x", "--etcd", "http://127.0.0.1:1"}, "--id"},
		{[]string{"server", "--id", "s1", "--etcd", "http://127.0.0.1:1"}, "--data"},
		{[]string{"server", "--id", "s1", "--data", "x", "--listen", "nope"}, "--listen"},
		{[]string{"server", "--id", "s1", "--data", "x", "--advertise", "nope"}, "--advertise"},
		{[]string{"server", "--id", "s1", "--data", "x", "--max-body-bytes", "1"}, "--max-body-bytes"},
		{[]string{"server", "--bogus"}, "bogus"},
	} {
		out, err := run(tc.args...)
		if err == nil {
			t.Errorf("%v: no error", tc.args)
			continue
		}
		msg := err.Error()
		if strings.Contains(msg, "\n") || !strings.Contains(msg, tc.want) {
			t.Errorf("%v: error %q should be one line naming %s", tc.args, msg, tc.want)
		}
		if strings.Contains(out, "Usage:") {
			t.Errorf("%v: printed the usage instead of one line: %s", tc.args, out)
		}
		if exitCode(err) != 2 {
			t.Errorf("%v: exit code %d, want 2 for a usage error", tc.args, exitCode(err))
		}
	}
}

func freePort(t *testing.T) int {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port
}

// freePortRange returns the first of n consecutive loopback ports that are
// free at the moment.
func freePortRange(t *testing.T, n int) int {
	t.Helper()
	for range 50 {
		base := freePort(t)
		if base+n > 65535 {
			continue
		}
		ok := true
		for i := 1; i < n && ok; i++ {
			ln, err := net.Listen("tcp", fmt.Sprintf("127.0.0.1:%d", base+i))
			if err != nil {
				ok = false
				continue
			}
			ln.Close()
		}
		if ok {
			return base
		}
	}
	t.Fatalf("no %d consecutive free ports", n)
	return 0
}

// syncBuffer is a bytes.Buffer safe for a writer and a reader goroutine.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// waitForOutput waits until out, the output of a command running in the
// background whose result done delivers, contains marker; what names the
// command in failures. An early exit fails the test (its result is put
// back in done for a cleanup that waits on it).
func waitForOutput(t *testing.T, out *syncBuffer, done chan error, marker, what string) {
	t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for !strings.Contains(out.String(), marker) {
		select {
		case err := <-done:
			done <- err
			t.Fatalf("%s exited early: %v\n%s", what, err, out.String())
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s did not start:\n%s", what, out.String())
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// startDev starts `tsdb dev` (three servers) in-process on free ports with
// the extra flags and returns the first server's URL; it stops when the
// test ends. A port taken between freePort and the server's bind (by a
// connection of another test process) makes the start fail with "address
// already in use": it starts again on other ports, up to five times.
func startDev(t *testing.T, extra ...string) string {
	t.Helper()
	for attempt := 1; ; attempt++ {
		port, etcdPort := freePortRange(t, 3), freePort(t)
		ctx, cancel := context.WithCancel(context.Background())
		var out syncBuffer
		root := newRootCmd()
		root.SetOut(&out)
		root.SetErr(&out)
		root.SetArgs(append([]string{"dev", "--port", fmt.Sprint(port), "--etcd-port", fmt.Sprint(etcdPort),
			"--data", t.TempDir(), "--log-level", "error"}, extra...))
		done := make(chan error, 1)
		go func() { done <- root.ExecuteContext(ctx) }()
		err := waitStarted(&out, done, "Press Ctrl-C")
		if err == nil {
			t.Cleanup(func() {
				cancel()
				if err := <-done; err != nil {
					t.Errorf("tsdb dev: %v", err)
				}
			})
			return fmt.Sprintf("http://127.0.0.1:%d", port)
		}
		cancel()
		if attempt < 5 && strings.Contains(err.Error(), "address already in use") {
			t.Logf("tsdb dev on ports %d-%d and %d: %v; again on others", port, port+2, etcdPort, err)
			continue
		}
		t.Fatalf("tsdb dev: %v\n%s", err, out.String())
	}
}

// waitStarted waits until out holds marker (nil), the command returns
// (its error, or one saying it exited) or a minute passes.
func waitStarted(out *syncBuffer, done chan error, marker string) error {
	deadline := time.Now().Add(60 * time.Second)
	for !strings.Contains(out.String(), marker) {
		select {
		case err := <-done:
			if err == nil {
				err = errors.New("exited early")
			}
			return err
		default:
		}
		if time.Now().After(deadline) {
			return errors.New("did not start within a minute")
		}
		time.Sleep(20 * time.Millisecond)
	}
	return nil
}

// waitForRow polls a raw query of table metrics on base until it answers
// the series cpu,host=a; which names base in the failure.
func waitForRow(t *testing.T, base, which string) {
	t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for {
		resp, err := http.Get(base + "/api/v1/tables/metrics/query?series=cpu*")
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode == 200 && strings.Contains(string(b), `"cpu,host=a"`) {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("the row never reached the %s server: %d %s", which, resp.StatusCode, b)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// TestDevRunsAndStops starts `tsdb dev` (its default three servers)
// in-process on free ports, uses the printed curl example's endpoints, reads
// the row back through the third server (replication), and stops it like
// Ctrl-C does.
func TestDevRunsAndStops(t *testing.T) {
	port, etcdPort := freePortRange(t, 3), freePort(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var out syncBuffer
	root := newRootCmd()
	root.SetOut(&out)
	secretFile := filepath.Join(t.TempDir(), "secret")
	if err := os.WriteFile(secretFile, []byte("cluster-s3cret\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	root.SetArgs([]string{"dev", "--port", fmt.Sprint(port), "--etcd-port", fmt.Sprint(etcdPort),
		"--data", t.TempDir(), "--cluster-secret-file", secretFile, "--log-level", "error"})
	done := make(chan error, 1)
	go func() { done <- root.ExecuteContext(ctx) }()

	base := fmt.Sprintf("http://127.0.0.1:%d", port)
	waitForOutput(t, &out, done, "Press Ctrl-C", "tsdb dev")
	if !strings.Contains(out.String(), base) || !strings.Contains(out.String(), "curl") {
		t.Fatalf("banner lacks the URL and curl examples:\n%s", out.String())
	}
	post := func(path, body string) int {
		resp, err := http.Post(base+path, "", strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		return resp.StatusCode
	}
	if s := post("/api/v1/tables", `{"name":"metrics"}`); s != 201 {
		t.Fatalf("create: %d", s)
	}
	if s := post("/write?db=metrics", "cpu,host=a usage=1"); s != 204 {
		t.Fatalf("write: %d", s)
	}
	third := fmt.Sprintf("http://127.0.0.1:%d", port+2)
	waitForRow(t, third, "third")
	checkAdminOnDev(t, base)
	if s := internalStatus(t, base, "", ""); s != http.StatusUnauthorized {
		t.Fatalf("internal API without --cluster-secret-file's secret: %d, want 401", s)
	}
	if s := internalStatus(t, base, "cluster-s3cret", ""); s != http.StatusOK {
		t.Fatalf("internal API with the cluster secret: %d, want 200", s)
	}
	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("tsdb dev stopped with %v", err)
		}
	case <-time.After(60 * time.Second):
		t.Fatal("tsdb dev did not stop")
	}
	if _, err := http.Get(base + "/healthz"); err == nil {
		t.Fatal("server still answers after stop")
	}
}

// TestServerCommand runs `tsdb server` against a real etcd, checks it
// serves with the bearer token from --auth-token-file, and stops it the way
// SIGTERM does (the command's context ends).
func TestServerCommand(t *testing.T) {
	e, err := embedetcd.Start(embedetcd.Config{Dir: t.TempDir(), Fast: true})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	tokenFile := filepath.Join(t.TempDir(), "token")
	if err := os.WriteFile(tokenFile, []byte("s3cret\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	port := freePort(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var out syncBuffer
	root := newRootCmd()
	root.SetOut(&out)
	root.SetArgs([]string{"server", "--id", "s1", "--listen", fmt.Sprintf("127.0.0.1:%d", port),
		"--data", t.TempDir(), "--etcd", e.Endpoint(), "--auth-token-file", tokenFile,
		"--cluster-secret-file", writeFile(t, "secret", "cluster-s3cret\n"), "--log-level", "error"})
	done := make(chan error, 1)
	go func() { done <- root.ExecuteContext(ctx) }()
	base := fmt.Sprintf("http://127.0.0.1:%d", port)
	waitForOutput(t, &out, done, "listening on", "tsdb server")
	get := func(path, token string) int {
		req, _ := http.NewRequest("GET", base+path, nil)
		if token != "" {
			req.Header.Set("Authorization", "Bearer "+token)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	if s := get("/api/v1/tables", ""); s != 401 {
		t.Fatalf("without the token: %d, want 401", s)
	}
	if s := get("/api/v1/tables", "s3cret"); s != 200 {
		t.Fatalf("with the token: %d, want 200", s)
	}
	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("tsdb server stopped with %v", err)
		}
	case <-time.After(60 * time.Second):
		t.Fatal("tsdb server did not stop")
	}
}

// checkAdminOnDev runs the operator's commands against the dev cluster at
// base: stale is clean (exit status 0), offline makes it report the
// partition (exit status 1), online makes it clean again.
func checkAdminOnDev(t *testing.T, base string) {
	t.Helper()
	admin := func(args ...string) (string, error) {
		var out bytes.Buffer
		root := newRootCmd()
		root.SetOut(&out)
		root.SetErr(&out)
		root.SetArgs(append([]string{"admin", "--server", base}, args...))
		err := root.ExecuteContext(context.Background())
		return out.String(), err
	}
	waitClean := func(what string) {
		t.Helper()
		deadline := time.Now().Add(60 * time.Second)
		for {
			out, err := admin("stale")
			if err == nil && strings.Contains(out, "no problems") {
				return
			}
			if time.Now().After(deadline) {
				t.Fatalf("%s: tsdb admin stale still reports problems: %v\n%s", what, err, out)
			}
			time.Sleep(200 * time.Millisecond)
		}
	}
	waitClean("a new dev cluster")
	resp, err := http.Get(base + "/api/v1/tables/metrics")
	if err != nil {
		t.Fatal(err)
	}
	var table struct {
		Partitions []struct {
			ID string `json:"id"`
		} `json:"partitions"`
	}
	err = json.NewDecoder(resp.Body).Decode(&table)
	resp.Body.Close()
	if err != nil || len(table.Partitions) == 0 {
		t.Fatalf("table answer: %v %+v", err, table)
	}
	pid := table.Partitions[0].ID
	if out, err := admin("offline", "metrics", pid); err != nil || !strings.Contains(out, "offline") {
		t.Fatalf("tsdb admin offline: %v\n%s", err, out)
	}
	out, err := admin("stale", "--json")
	var h api.HealthResponse
	if err == nil || json.Unmarshal([]byte(out), &h) != nil || !slices.ContainsFunc(h.Problems, func(p api.Problem) bool {
		return p.Kind == api.ProblemOffline && p.Partition != nil && p.Partition.String() == pid
	}) {
		t.Fatalf("tsdb admin stale --json with an offline partition: %v\n%s", err, out)
	}
	if out, err := admin("online", "metrics", pid); err != nil {
		t.Fatalf("tsdb admin online: %v\n%s", err, out)
	}
	waitClean("after online")
}

// TestPprofAddrLoopbackOnly: the profiler serves on a loopback address and
// refuses any other (it takes no credentials).
func TestPprofAddrLoopbackOnly(t *testing.T) {
	log := slog.New(slog.DiscardHandler)
	for _, addr := range []string{"0.0.0.0:0", ":0", "10.1.2.3:6060", "example.com:6060", "nonsense"} {
		if stop, err := startPprof(t.Context(), addr, log); err == nil {
			stop()
			t.Errorf("--pprof-addr %q accepted", addr)
		}
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	_ = ln.Close()
	stop, err := startPprof(t.Context(), addr, log)
	if err != nil {
		t.Fatal(err)
	}
	defer stop()
	resp, err := http.Get("http://" + addr + "/debug/pprof/cmdline")
	if err != nil {
		t.Fatal(err)
	}
	_ = resp.Body.Close()
	if resp.StatusCode != 200 {
		t.Fatalf("/debug/pprof/cmdline: %s", resp.Status)
	}
}
