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

	"github.com/tsdb/tsdb/cluster/embedetcd"
	"github.com/tsdb/tsdb/internal/testcerts"
	"github.com/tsdb/tsdb/internal/tlsconfig"
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
	waitForOutput(t, &out, done, "Press Ctrl-C", "tsdb dev")
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
	waitForRow(t, second, "second")
}

// startTLSServerCmd runs `tsdb server` id in-process with the TLS, etcd TLS
// and etcd authentication flags, and returns its https URL once it
// listens; it stops when the test ends.
func startTLSServerCmd(t *testing.T, id string, ca *testcerts.CA, etcd string, extra ...string) string {
	t.Helper()
	cert, key := ca.Issue(t, id)
	etcdCert, etcdKey := ca.Issue(t, id+"-etcd")
	port := freePort(t)
	ctx, cancel := context.WithCancel(context.Background())
	var out syncBuffer
	root := newRootCmd()
	root.SetOut(&out)
	root.SetErr(&out)
	root.SetArgs(append([]string{"server", "--id", id, "--listen", fmt.Sprintf("127.0.0.1:%d", port),
		"--data", t.TempDir(), "--etcd", etcd, "--log-level", "error",
		"--cluster-secret-file", writeFile(t, "secret", "cluster-s3cret\n"),
		"--tls-cert-file", cert, "--tls-key-file", key, "--tls-ca-file", ca.CAFile,
		"--etcd-ca-file", ca.CAFile, "--etcd-cert-file", etcdCert, "--etcd-key-file", etcdKey,
		"--etcd-username", "root", "--etcd-password-file", writeFile(t, "etcd-pw", "etcd-pw\n")}, extra...))
	done := make(chan error, 1)
	go func() { done <- root.ExecuteContext(ctx) }()
	t.Cleanup(func() {
		cancel()
		select {
		case err := <-done:
			if err != nil {
				t.Errorf("tsdb server %s: %v", id, err)
			}
		case <-time.After(60 * time.Second):
			t.Errorf("tsdb server %s did not stop", id)
		}
	})
	base := fmt.Sprintf("https://127.0.0.1:%d", port)
	waitForOutput(t, &out, done, "listening on "+base, "tsdb server "+id)
	return base
}

// TestServerCommandTLS (issue 14 item 9): two `tsdb server`s with
// --tls-cert-file/--tls-key-file/--tls-ca-file on an etcd reached with
// --etcd-ca-file/--etcd-cert-file/--etcd-key-file and
// --etcd-username/--etcd-password-file. A write through one is read through
// the other (internal calls over TLS); `tsdb admin` and `tsdb loadtest`
// reach them with --tls-ca-file and are refused without it; a wrong etcd
// password keeps a server from starting.
func TestServerCommandTLS(t *testing.T) {
	ca := testcerts.NewCA(t, "tsdb")
	etcdCert, etcdKey := ca.Issue(t, "etcd")
	e, err := embedetcd.Start(embedetcd.Config{Dir: t.TempDir(), Fast: true, CertFile: etcdCert, KeyFile: etcdKey,
		CAFile: ca.CAFile, ClientCertAuth: true, RootPassword: "etcd-pw"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(e.Close)
	s1 := startTLSServerCmd(t, "s1", ca, e.Endpoint())
	s2 := startTLSServerCmd(t, "s2", ca, e.Endpoint())
	tc, err := tlsconfig.Client(ca.CAFile, "", "")
	if err != nil {
		t.Fatal(err)
	}
	hc := &http.Client{Timeout: 60 * time.Second, Transport: &http.Transport{TLSClientConfig: tc}}
	defer hc.CloseIdleConnections()
	post := func(url, body string) int {
		req, _ := http.NewRequest("POST", url, strings.NewReader(body))
		req.Header.Set("X-TSDB-Consistency", "all")
		resp, err := hc.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		return resp.StatusCode
	}
	if s := post(s1+"/api/v1/tables", `{"name":"metrics","replication_factor":2}`); s != 201 {
		t.Fatalf("create over https: %d", s)
	}
	if s := post(s1+"/write?db=metrics", "cpu,host=a usage=1"); s != 204 {
		t.Fatalf("write over https: %d", s)
	}
	resp, err := hc.Get(s2 + "/api/v1/tables/metrics/query?series=cpu*&consistency=one")
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 || !strings.Contains(string(b), `"cpu,host=a"`) {
		t.Fatalf("the row written through s1 is not on s2: %d %s", resp.StatusCode, b)
	}

	if out, err := run("admin", "tables", "--server", s2, "--tls-ca-file", ca.CAFile); err != nil || !strings.Contains(out, "metrics") {
		t.Fatalf("tsdb admin tables over https: %v\n%s", err, out)
	}
	if out, err := run("admin", "tables", "--server", s2); err == nil || !strings.Contains(err.Error(), "certificate") {
		t.Fatalf("tsdb admin tables over https without --tls-ca-file: %v\n%s", err, out)
	}
	dir := t.TempDir()
	if out, err := run(append(tinyLoadtestArgs(dir, "chart.svg"), "--url", s1, "--tls-ca-file", ca.CAFile)...); err != nil {
		t.Fatalf("tsdb loadtest over https: %v\n%s", err, out)
	}
	rep := readLoadtestReport(t, dir, 1)
	if len(rep.Servers) != 2 || !strings.HasPrefix(rep.Servers[0].URL, "https://") {
		t.Fatalf("load test servers %+v, want both over https", rep.Servers)
	}

	// A wrong etcd password: the server does not start.
	cert, key := ca.Issue(t, "s3")
	out, err := run("server", "--id", "s3", "--listen", "127.0.0.1:0", "--data", t.TempDir(), "--etcd", e.Endpoint(),
		"--cluster-secret-file", writeFile(t, "secret", "cluster-s3cret\n"), "--tls-cert-file", cert, "--tls-key-file", key,
		"--etcd-ca-file", ca.CAFile, "--etcd-cert-file", cert, "--etcd-key-file", key,
		"--etcd-username", "root", "--etcd-password-file", writeFile(t, "bad-pw", "wrong\n"), "--log-level", "error")
	if err == nil {
		t.Fatalf("a server with a wrong etcd password started:\n%s", out)
	}
}

// TestTLSFlagErrors: a half-given TLS or etcd credential pair, or an
// unreadable CA file, is a one-line usage error naming the flag.
func TestTLSFlagErrors(t *testing.T) {
	pem := writeFile(t, "x.pem", "not a certificate\n")
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"server", "--id", "s1", "--data", t.TempDir(), "--tls-cert-file", pem}, "--tls-key-file"},
		{[]string{"server", "--id", "s1", "--data", t.TempDir(), "--etcd-key-file", pem}, "--etcd-cert-file"},
		{[]string{"server", "--id", "s1", "--data", t.TempDir(), "--etcd-username", "root"}, "--etcd-password-file"},
		{[]string{"server", "--id", "s1", "--data", t.TempDir(), "--etcd-username", "root", "--etcd-password-file", "/nonexistent"}, "--etcd-password-file"},
		{[]string{"admin", "tables", "--server", "https://127.0.0.1:1", "--tls-ca-file", pem}, "--tls-ca-file"},
		{[]string{"loadtest", "--url", "https://127.0.0.1:1", "--tls-ca-file", pem}, "--tls-ca-file"},
	} {
		out, err := run(tc.args...)
		if err == nil {
			t.Errorf("%v: no error\n%s", tc.args, out)
			continue
		}
		if msg := err.Error(); strings.Contains(msg, "\n") || !strings.Contains(msg, tc.want) {
			t.Errorf("%v: error %q should be one line naming %s", tc.args, msg, tc.want)
		}
	}
}
