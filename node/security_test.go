package node

import (
	"context"
	"errors"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/tsdb/tsdb/cluster/embedetcd"
	"github.com/tsdb/tsdb/cluster/rpc"
	"github.com/tsdb/tsdb/cluster/wire"
	"github.com/tsdb/tsdb/http/api"
	"github.com/tsdb/tsdb/internal/testcerts"
	"github.com/tsdb/tsdb/internal/tlsconfig"
)

// TestStartRefusesAuthTokenWithoutSecret (issue 14 item 8): a server whose
// public API wants a bearer token and that has no cluster secret would
// leave /internal/ (read data, write rows with any version, commit
// METADATA ops) open to anyone; it refuses to start and says why.
func TestStartRefusesAuthTokenWithoutSecret(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	n, err := Start(ctx, Config{ID: "s1", Listen: "127.0.0.1:0", DataDir: t.TempDir(),
		EtcdEndpoints: []string{"http://127.0.0.1:1"}, AuthToken: "tok", HTTP: testHTTP})
	if err == nil {
		stopNode(t, n)
		t.Fatal("a server with an auth token and no cluster secret started")
	}
	if !strings.Contains(err.Error(), "cluster secret") || !strings.Contains(err.Error(), "internal API") {
		t.Fatalf("refusal %q does not say why (cluster secret, internal API)", err)
	}
}

// tlsEtcd starts an embedded etcd serving its clients over TLS with a
// certificate of ca, requiring client certificates of ca, with
// authentication on (user root, password rootPW).
func tlsEtcd(t *testing.T, ca *testcerts.CA, rootPW string) *embedetcd.Etcd {
	t.Helper()
	cert, key := ca.Issue(t, "etcd")
	e, err := embedetcd.Start(embedetcd.Config{Dir: t.TempDir(), Fast: true, CertFile: cert, KeyFile: key,
		CAFile: ca.CAFile, ClientCertAuth: true, RootPassword: rootPW})
	if err != nil {
		t.Fatalf("start etcd with TLS and auth: %v", err)
	}
	t.Cleanup(e.Close)
	if !strings.HasPrefix(e.Endpoint(), "https://") {
		t.Fatalf("etcd endpoint %s is not https", e.Endpoint())
	}
	return e
}

// httpsDo makes one request with a client trusting ca's certificates.
func httpsDo(t *testing.T, ca *testcerts.CA, method, url, body string, headers ...string) (int, string) {
	t.Helper()
	tc, err := tlsconfig.Client(ca.CAFile, "", "")
	if err != nil {
		t.Fatal(err)
	}
	hc := &http.Client{Timeout: 60 * time.Second, Transport: &http.Transport{TLSClientConfig: tc}}
	defer hc.CloseIdleConnections()
	req, err := http.NewRequest(method, url, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i+1 < len(headers); i += 2 {
		req.Header.Set(headers[i], headers[i+1])
	}
	resp, err := hc.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, url, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp.StatusCode, string(b)
}

// TestClusterOverTLS (issue 14 item 9): three servers serving HTTPS only,
// on an etcd reached over TLS with a client certificate and a password.
// A table created, an insert acknowledged by all three replicas and a query
// go over https, so every internal call (METADATA store, forwarded insert,
// replication push, sub-query) does too: each server's membership entry
// says TLS and its peers call it at https://. A plain-HTTP client gets no
// answer, and a server whose certificate an unknown CA signed is refused by
// its peers.
func TestClusterOverTLS(t *testing.T) {
	ca, other := testcerts.NewCA(t, "tsdb"), testcerts.NewCA(t, "intruder")
	e := tlsEtcd(t, ca, "etcd-pw")
	etcdCert, etcdKey := ca.Issue(t, "etcd-client")
	c := startClusterOn(t, e, 3, func(cfg *Config) {
		signer := ca
		if cfg.ID == "s4" {
			signer = other
		}
		cfg.TLSCertFile, cfg.TLSKeyFile = signer.Issue(t, cfg.ID)
		cfg.TLSCAFile = ca.CAFile
		cfg.EtcdCAFile, cfg.EtcdCertFile, cfg.EtcdKeyFile = ca.CAFile, etcdCert, etcdKey
		cfg.EtcdUsername, cfg.EtcdPassword = "root", "etcd-pw"
		cfg.ClusterSecret = "cluster-s3cret"
	})
	for id, n := range c.nodes {
		if !strings.HasPrefix(n.URL(), "https://") {
			t.Fatalf("%s URL %s", id, n.URL())
		}
	}
	for _, info := range c.nodes["s1"].dir.Live() {
		if !info.TLS {
			t.Fatalf("membership entry of %s does not say TLS: %+v", info.ID, info)
		}
	}
	s1, s3 := c.nodes["s1"].URL(), c.nodes["s3"].URL()
	if st, b := httpsDo(t, ca, "POST", s1+"/api/v1/tables", `{"name":"cpu","replication_factor":3}`); st != 201 {
		t.Fatalf("create table over https: %d %s", st, b)
	}
	if st, b := httpsDo(t, ca, "POST", s3+"/write?db=cpu&precision=ns", string(lpBatch("tls", 1_000_000, 50, 5)),
		api.HeaderConsistency, "all"); st != 204 {
		t.Fatalf("insert over https with consistency all: %d %s", st, b)
	}
	waitFor(t, "the rows on every replica", func() bool {
		for _, id := range []string{"s1", "s2", "s3"} {
			st, b := httpsDo(t, ca, "GET", c.nodes[id].URL()+"/api/v1/tables/cpu/query?limit=1000&consistency=one", "")
			if st != 200 || strings.Count(b, `"series"`) != 50 {
				return false
			}
		}
		return true
	})
	st, b := httpsDo(t, ca, "GET", s1+"/api/v1/tables/cpu/query?limit=1000", "")
	if st != 200 || strings.Count(b, `"series"`) != 50 {
		t.Fatalf("query over https: %d, %d rows", st, strings.Count(b, `"series"`))
	}

	// Plain HTTP gets no answer from a TLS listener.
	plain := &http.Client{Timeout: 10 * time.Second}
	if resp, err := plain.Get("http://" + c.nodes["s1"].Addr() + "/healthz"); err == nil {
		resp.Body.Close()
		if resp.StatusCode == 200 {
			t.Fatal("a plain-HTTP client got 200 from a TLS server")
		}
	}

	// A server whose certificate is not from the cluster's CA joins the
	// list; its peers refuse to talk to it.
	c.start("s4")
	addr, err := c.nodes["s1"].dir.Addr(context.Background(), "s4")
	if err != nil || !strings.HasPrefix(addr, "https://") {
		t.Fatalf("s4's address as s1 sees it: %q %v", addr, err)
	}
	err = c.nodes["s1"].rpc.Call(context.Background(), addr, wire.PathReplicas, wire.ReplicasRequest{Table: "cpu"}, &wire.ReplicasResponse{})
	if !errors.Is(err, rpc.ErrTLS) {
		t.Fatalf("s1 calling s4 (untrusted certificate): %v, want rpc.ErrTLS", err)
	}
}

// TestEtcdTLSAndAuth (issue 14 item 9): a server reaches a TLS etcd with
// authentication only with the right CA, client certificate, username and
// password; each wrong one makes Start fail.
func TestEtcdTLSAndAuth(t *testing.T) {
	ca, other := testcerts.NewCA(t, "tsdb"), testcerts.NewCA(t, "other")
	e := tlsEtcd(t, ca, "etcd-pw")
	cert, key := ca.Issue(t, "etcd-client")
	otherCert, otherKey := other.Issue(t, "etcd-client")
	good := func(cfg *Config) {
		cfg.EtcdCAFile, cfg.EtcdCertFile, cfg.EtcdKeyFile = ca.CAFile, cert, key
		cfg.EtcdUsername, cfg.EtcdPassword = "root", "etcd-pw"
	}
	for _, tc := range []struct {
		name string
		mut  func(*Config)
	}{
		{"wrong password", func(cfg *Config) { cfg.EtcdPassword = "nope" }},
		{"unknown user", func(cfg *Config) { cfg.EtcdUsername = "mallory" }},
		{"no credentials", func(cfg *Config) { cfg.EtcdUsername, cfg.EtcdPassword = "", "" }},
		{"untrusted etcd certificate", func(cfg *Config) { cfg.EtcdCAFile = other.CAFile }},
		{"untrusted client certificate", func(cfg *Config) { cfg.EtcdCertFile, cfg.EtcdKeyFile = otherCert, otherKey }},
		{"no client certificate", func(cfg *Config) { cfg.EtcdCertFile, cfg.EtcdKeyFile = "", "" }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := Config{ID: "s1", Listen: "127.0.0.1:0", DataDir: t.TempDir(), EtcdEndpoints: []string{e.Endpoint()},
				NoPresplit: true, NoRebalance: true, NoSmear: true, HTTP: testHTTP}
			good(&cfg)
			tc.mut(&cfg)
			// Every case must fail; a short bound keeps the TLS ones (an
			// etcd the client never reaches) from waiting out etcd's call
			// timeout. The positive control is the start below.
			ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
			defer cancel()
			n, err := Start(ctx, cfg)
			if err == nil {
				stopNode(t, n)
				t.Fatal("the server started")
			}
		})
	}
	n := startNode(t, e, "s1", t.TempDir(), good)
	if _, err := n.etcd.Get(context.Background(), "/tsdb/servers/s1"); err != nil {
		t.Fatalf("etcd with the right CA, certificate and password: %v", err)
	}
}
