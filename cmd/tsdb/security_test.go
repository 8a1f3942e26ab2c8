package main

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestServerRefusesTokenWithoutSecret (issue 14 item 8): `tsdb server`
// with --auth-token-file and no --cluster-secret-file refuses to start (its
// internal API would be open to anyone) and says why, in one line.
func TestServerRefusesTokenWithoutSecret(t *testing.T) {
	tokenFile := filepath.Join(t.TempDir(), "token")
	if err := os.WriteFile(tokenFile, []byte("s3cret\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	out, err := run("server", "--id", "s1", "--listen", "127.0.0.1:0", "--data", t.TempDir(),
		"--etcd", "http://127.0.0.1:1", "--auth-token-file", tokenFile)
	if err == nil {
		t.Fatalf("the server started:\n%s", out)
	}
	msg := err.Error()
	if strings.Contains(msg, "\n") || !strings.Contains(msg, "--cluster-secret-file") || !strings.Contains(msg, "internal API") {
		t.Fatalf("refusal %q should be one line naming --cluster-secret-file and the internal API", msg)
	}
}

// TestDevGeneratesClusterSecret (issue 14 item 8): `tsdb dev` without
// --cluster-secret-file gives its servers a random cluster secret: an
// anonymous internal call is refused, and the servers, which send it, still
// replicate a write.
func TestDevGeneratesClusterSecret(t *testing.T) {
	port, etcdPort := freePortRange(t, 2), freePort(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var out syncBuffer
	root := newRootCmd()
	root.SetOut(&out)
	root.SetArgs([]string{"dev", "--servers", "2", "--port", fmt.Sprint(port), "--etcd-port", fmt.Sprint(etcdPort),
		"--data", t.TempDir(), "--log-level", "error"})
	done := make(chan error, 1)
	go func() { done <- root.ExecuteContext(ctx) }()
	defer func() {
		cancel()
		select {
		case <-done:
		case <-time.After(60 * time.Second):
			t.Error("tsdb dev did not stop")
		}
	}()
	deadline := time.Now().Add(60 * time.Second)
	for !strings.Contains(out.String(), "Press Ctrl-C") {
		select {
		case err := <-done:
			t.Fatalf("tsdb dev exited early: %v\n%s", err, out.String())
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("tsdb dev did not start:\n%s", out.String())
		}
		time.Sleep(50 * time.Millisecond)
	}
	first := fmt.Sprintf("http://127.0.0.1:%d", port)
	second := fmt.Sprintf("http://127.0.0.1:%d", port+1)
	for _, base := range []string{first, second} {
		if s := internalStatus(t, base, "", ""); s != http.StatusUnauthorized {
			t.Fatalf("anonymous internal call to %s: %d, want 401", base, s)
		}
	}
	post := func(path, body string) int {
		resp, err := http.Post(first+path, "", strings.NewReader(body))
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
	deadline = time.Now().Add(60 * time.Second)
	for {
		resp, err := http.Get(second + "/api/v1/tables/metrics/query?series=cpu*")
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode == 200 && strings.Contains(string(b), `"cpu,host=a"`) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the row never reached the second server: %d %s", resp.StatusCode, b)
		}
		time.Sleep(50 * time.Millisecond)
	}
}
