package node

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"os"
	"testing"
	"time"

	"github.com/tsdb/tsdb/cluster/embedetcd"
)

// testEtcd starts a real embedded etcd for one test.
func testEtcd(t testing.TB) *embedetcd.Etcd {
	t.Helper()
	e, err := embedetcd.Start(embedetcd.Config{Dir: t.TempDir(), Fast: true})
	if err != nil {
		t.Fatalf("start etcd: %v", err)
	}
	t.Cleanup(e.Close)
	return e
}

// startNode starts a server on a free loopback port; the node is stopped at
// the end of the test unless the test stops it first.
func startNode(t testing.TB, e *embedetcd.Etcd, id, dir string, mut ...func(*Config)) *Node {
	t.Helper()
	// Pre-split and rebalancing change partition maps on their own, and
	// smearing delays inserts into the narrow partitions many tests make;
	// the tests of other features turn them off, their own tests back on.
	// TSDB_TEST_MEMHEAD=0 runs the servers without a memory head (tsdb
	// server --memory-head=false), for a comparison of the benchmarks.
	cfg := Config{ID: id, Listen: "127.0.0.1:0", DataDir: dir, EtcdEndpoints: []string{e.Endpoint()},
		NoPresplit: true, NoRebalance: true, NoSmear: true, HTTP: testHTTP, NoMemoryHead: os.Getenv("TSDB_TEST_MEMHEAD") == "0"}
	if os.Getenv("TSDB_TEST_LOG") != "" {
		// Debugging aid: the servers' logs on stderr.
		cfg.Logger = slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelDebug}))
	}
	for _, m := range mut {
		m(&cfg)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	n, err := Start(ctx, cfg)
	if err != nil {
		t.Fatalf("start node %s: %v", id, err)
	}
	t.Cleanup(func() { stopNode(t, n) })
	return n
}

func stopNode(t testing.TB, n *Node) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := n.Stop(ctx); err != nil {
		t.Errorf("stop node: %v", err)
	}
}

// client is a tiny HTTP client for tests.
type client struct {
	t     testing.TB
	base  string
	token string
}

type response struct {
	status int
	body   []byte
	header http.Header
}

func (c *client) do(method, path string, body []byte, headers ...string) response {
	c.t.Helper()
	req, err := http.NewRequest(method, c.base+path, bytes.NewReader(body))
	if err != nil {
		c.t.Fatal(err)
	}
	if c.token != "" {
		req.Header.Set("Authorization", "Bearer "+c.token)
	}
	for i := 0; i+1 < len(headers); i += 2 {
		req.Header.Set(headers[i], headers[i+1])
	}
	cl := &http.Client{Timeout: 60 * time.Second}
	if req.Header.Get("Expect") != "" {
		// Send the body only after the server's 100 Continue (as curl does
		// for large bodies).
		cl.Transport = &http.Transport{ExpectContinueTimeout: 10 * time.Second}
	}
	resp, err := cl.Do(req)
	if err != nil {
		c.t.Fatalf("%s %s: %v", method, path, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		c.t.Fatal(err)
	}
	return response{status: resp.StatusCode, body: b, header: resp.Header}
}

// must checks the status and decodes the JSON body into v (when non-nil).
func (c *client) must(status int, r response, v any) {
	c.t.Helper()
	if r.status != status {
		c.t.Fatalf("status %d, want %d: %s", r.status, status, r.body)
	}
	if v != nil {
		if err := json.Unmarshal(r.body, v); err != nil {
			c.t.Fatalf("decode %s: %v", r.body, err)
		}
	}
}
